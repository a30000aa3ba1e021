import { setup } from 'xstate';
import type { App } from '../../src/app.js';
import type { AuditMetadata } from '../../src/core/events.js';
import { machineDecider } from '../../src/core/machine-decider.js';
import type { StreamKind } from '../../src/ui/index.js';

/**
 * A small lifecycle for exercising the `/ui` page and its endpoints independently of any
 * context: a job is created, queued, worked on, then finishes or fails (and may be retried).
 */
export type JobEvent =
  | { type: 'JobCreated'; data: { name: string; secret?: unknown } }
  | { type: 'JobQueued'; data: object }
  | { type: 'JobStarted'; data: object }
  | { type: 'JobFinished'; data: { ok: boolean } }
  | { type: 'JobRetried'; data: object }
  | { type: 'JobNoted'; data: { note: string } };

export const jobMachine = setup({
  types: { events: {} as JobEvent },
  guards: {
    succeeded: ({ event }) => event.type === 'JobFinished' && event.data.ok,
  },
}).createMachine({
  id: 'job',
  initial: 'none',
  states: {
    none: { on: { JobCreated: 'pending' } },
    pending: { on: { JobQueued: 'queued' } },
    queued: { on: { JobStarted: 'working' } },
    working: {
      on: { JobFinished: [{ guard: 'succeeded', target: 'done' }, { target: 'failed' }] },
    },
    failed: { on: { JobRetried: 'queued' } },
    done: { type: 'final' },
  },
});

export const jobKind: StreamKind = { name: 'job', machine: jobMachine, streamPrefix: 'job-' };

const decider = machineDecider(jobMachine);

/** Append job events through the command handler (checked by the machine), as a named actor. */
export function jobCommands(app: App) {
  const meta = (actor: string, requestId: string): AuditMetadata => ({
    actor: { accessor: `acc-${actor}`, name: actor },
    requestId,
    remoteAddress: '127.0.0.1',
  });
  return {
    append(stream: string, events: readonly JobEvent[], actor = 'alice', requestId = 'req-1') {
      return app.core.handler.handleSync(stream, decider, () => events, meta(actor, requestId));
    },
  };
}
