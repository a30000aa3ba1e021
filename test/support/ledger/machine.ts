import { assign, setup } from 'xstate';
import type { LedgerEvent } from './events.js';

/**
 * A small lifecycle used to test the core: open → (deposits, withdrawals) → closed. The guard
 * refuses a withdrawal larger than the balance, so illegal transitions are easy to provoke.
 */
export const accountMachine = setup({
  types: { context: {} as { balance: number }, events: {} as LedgerEvent },
  guards: {
    coversWithdrawal: ({ context, event }) =>
      event.type === 'FundsWithdrawn' && event.data.amount <= context.balance,
    isEmpty: ({ context }) => context.balance === 0,
  },
}).createMachine({
  id: 'account',
  initial: 'none',
  context: { balance: 0 },
  states: {
    none: { on: { AccountOpened: 'open' } },
    open: {
      on: {
        FundsDeposited: {
          actions: assign({ balance: ({ context, event }) => context.balance + event.data.amount }),
        },
        FundsWithdrawn: {
          guard: 'coversWithdrawal',
          actions: assign({ balance: ({ context, event }) => context.balance - event.data.amount }),
        },
        StatementIssued: {},
        AccountClosed: { guard: 'isEmpty', target: 'closed' },
      },
    },
    closed: { type: 'final' },
  },
});
