import type { Sealed } from '../../../src/core/seal.js';

export type LedgerEvent =
  | { type: 'AccountOpened'; data: { id: string; owner: string; pin: Sealed } }
  | { type: 'FundsDeposited'; data: { amount: number } }
  | { type: 'FundsWithdrawn'; data: { amount: number } }
  | { type: 'StatementIssued'; data: { period: number } }
  | { type: 'AccountClosed'; data: Record<string, never> }
  | { type: 'LargeDepositFlagged'; data: { account: string; position: number; amount: number } };

export const accountStream = (id: string) => `account-${id}`;
export const flagStream = (id: string) => `flags-${id}`;

/** Statements fall due every 30 days after opening. */
export const STATEMENT_PERIOD_MS = 30 * 24 * 3600 * 1000;
export const LARGE_DEPOSIT = 100;
