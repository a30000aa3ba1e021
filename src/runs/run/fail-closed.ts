import type { Decider } from '../../core/command-handler.js';
import { systemMetadata, type NewEvent, type StoredEvent } from '../../core/events.js';
import type { Reactor } from '../../core/reactors.js';
import { isFinalStatus } from '../lifecycle.js';
import type { RunsModel } from '../model.js';
import { executorCommands, runDecider } from './commands.js';

/**
 * A reactor step that failed for good: recorded on the reactor's dead-letter stream
 * (`dead-letter-<reactor>`, read with `keel events --type ReactorStepFailed`), after which the
 * reactor moves on to its next event instead of retrying this one forever.
 */
export type ReactorStepFailed = NewEvent<
  'ReactorStepFailed',
  {
    reactor: string;
    /** The log position and type of the event the step reacted to. */
    position: number;
    eventType: string;
    stream: string;
    /** The run the step was for, errored because of it (null when none was). */
    runId: string | null;
    message: string;
    attempts: number;
  }
>;

/** The stream a reactor's failed steps are recorded on. */
export const deadLetterStream = (reactor: string): string => `dead-letter-${reactor}`;

/** How often a step is tried before it is given up: a conflict with a concurrent write clears. */
export const STEP_ATTEMPTS = 3;

const appendOnly: Decider<null, ReactorStepFailed> = {
  initialState: () => null,
  evolve: () => null,
};

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/**
 * Ends a run that Keel could not move on: errored, with the failure appended to the log of the
 * phase it was in (the plan's, or the apply's once it is queued to apply), so the workspace's
 * queue unlocks and goes on. A final run, or one whose machine refuses the error, is left alone;
 * returns whether the run was errored.
 */
export function failRun(
  model: RunsModel,
  runId: string,
  what: string,
  error: unknown,
  actor = 'executor',
): Promise<boolean> {
  return model.core.handler.atomically(() => failRunSync(model, runId, what, error, actor));
}

/** {@link failRun} inside `core.handler.atomically` only. */
export function failRunSync(
  model: RunsModel,
  runId: string,
  what: string,
  error: unknown,
  actor = 'executor',
): boolean {
  const run = model.runs.get(runId);
  if (run === null || isFinalStatus(run.status)) return false;
  const { handler, sealer } = model.core;
  const phase = run.status === 'apply_queued' || run.status === 'applying' ? 'apply' : 'plan';
  const message = `${what} failed inside Keel: ${messageOf(error)}`;
  const before = model.runs.log(runId, phase)?.log ?? '';
  const log = [
    ...(before === '' ? [] : [before.replace(/\n$/, ''), '']),
    `Error: ${message}`,
    '',
    'The run is errored so that the workspace can go on with its next run.',
    '',
  ].join('\n');
  const decide = executorCommands.errored(runId, {
    phase: run.status === 'planning' || phase === 'apply' ? phase : null,
    message,
    log: sealer.seal(log),
  });
  handler.handleSync(
    runId,
    runDecider,
    (s) =>
      s.can({ type: 'RunErrored', data: { phase: null, message, log: null } }) ? decide(s) : [],
    systemMetadata(actor),
  );
  return model.runs.get(runId)?.status === 'errored';
}

/**
 * A reactor that fails closed: a step that throws is tried {@link STEP_ATTEMPTS} times, then the run
 * it was for is errored (see {@link failRun}), the failure is recorded on the reactor's
 * dead-letter stream, and the reactor goes on with its next event. Only when even that cannot be
 * recorded (the log out of reach) does the failure reach the reactor runner, which retries later.
 */
export function failClosed(
  model: RunsModel,
  reactor: Reactor,
  options: {
    /** The run an event's step is for, or null (it is then only recorded). */
    runOf(event: StoredEvent): string | null;
    /** Called once the run is errored (e.g. to stop a phase still running for it). */
    onFailed?(runId: string): void;
  },
): Reactor {
  const { core } = model;
  /** Errors the run and records the dead letter; the errored run's id, or null. */
  const record = (event: StoredEvent, failure: unknown): string | null => {
    const runId = options.runOf(event);
    const errored =
      runId !== null && failRunSync(model, runId, `${reactor.name} on ${event.type}`, failure);
    core.handler.handleSync(
      deadLetterStream(reactor.name),
      appendOnly,
      () => [
        {
          type: 'ReactorStepFailed',
          data: {
            reactor: reactor.name,
            position: event.position,
            eventType: event.type,
            stream: event.stream,
            runId: errored ? runId : null,
            message: messageOf(failure),
            attempts: STEP_ATTEMPTS,
          },
        },
      ],
      systemMetadata(reactor.name),
    );
    return errored ? runId : null;
  };
  return {
    name: reactor.name,
    ...(reactor.types === undefined ? {} : { types: reactor.types }),
    async react(event) {
      let failure: unknown;
      for (let attempt = 1; attempt <= STEP_ATTEMPTS; attempt++) {
        try {
          await reactor.react(event);
          return;
        } catch (error) {
          failure = error;
        }
      }
      core.logger.error(
        { err: failure, reactor: reactor.name, position: event.position, type: event.type },
        'reactor step failed; its run is errored and the reactor goes on',
      );
      let errored: string | null;
      try {
        errored = await core.handler.atomically(() => record(event, failure));
      } catch (recordError) {
        throw new Error(`${reactor.name}: recording the failure of ${event.type}`, {
          cause: new AggregateError([failure, recordError]),
        });
      }
      // Once the error is recorded: a phase still running for the run is stopped.
      if (errored !== null) options.onFailed?.(errored);
    },
  };
}
