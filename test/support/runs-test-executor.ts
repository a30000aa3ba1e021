import type { ContextModule, Core } from '../../src/context.js';
import { isKeelError } from '../../src/core/errors.js';
import { systemMetadata, type StoredEvent } from '../../src/core/events.js';
import { executorCommands, runDecider } from '../../src/runs/run/commands.js';

/**
 * A stand-in executor for end-to-end tests, composed into the test daemon only (Keel itself ships
 * no fake executor). It reacts to queued plans and applies by sending the commands the real
 * executor sends: plan started and finished (one resource to add), apply started and finished.
 */
export function testExecutorContext(core: Core): ContextModule {
  const metadata = systemMetadata('test executor');
  const send = async (
    runId: string,
    decide: ReturnType<typeof executorCommands.planStarted>,
  ): Promise<void> => {
    try {
      await core.handler.handle(runId, runDecider, decide, metadata);
    } catch (err) {
      // at-least-once delivery: a step already taken is refused by the machine, which is fine
      if (!isKeelError(err)) throw err;
    }
  };
  return {
    name: 'test-executor',
    projections: [],
    reactors: [
      {
        name: 'test-executor',
        types: ['RunPlanQueued', 'RunApplyQueued'],
        async react(event: StoredEvent) {
          const id = event.stream;
          if (event.type === 'RunPlanQueued') {
            await send(id, executorCommands.planStarted(id));
            await send(
              id,
              executorCommands.planFinished(id, {
                hasChanges: true,
                counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
                log: 'Plan: 1 to add, 0 to change, 0 to destroy.\n',
              }),
            );
          } else {
            await send(id, executorCommands.applyStarted(id));
            await send(
              id,
              executorCommands.applyFinished(id, {
                log: 'Apply complete! Resources: 1 added, 0 changed, 0 destroyed.\n',
              }),
            );
          }
        },
      },
    ],
  };
}
