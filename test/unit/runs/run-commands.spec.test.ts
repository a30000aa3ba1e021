import { describe, it } from 'vitest';
import { ConflictError, IllegalTransitionError, NotFoundError } from '../../../src/core/errors.js';
import type { RunCreated, RunEvent } from '../../../src/runs/events.js';
import type { RunSnapshot } from '../../../src/runs/lifecycle.js';
import {
  commentOnRun,
  confirmRun,
  createRun,
  discardRun,
  executorCommands as x,
  forceCancel,
  requestCancel,
  requestForceExecute,
  runDecider,
} from '../../../src/runs/run/commands.js';
import { decide, spec, type Spec } from '../../support/decider-spec.js';

/** The run stream's commands, given its history: the events they append, or their refusals. */

const ID = 'run-1';
const STREAM = `run:${ID}`;
const T0 = new Date('2026-01-01T00:00:00.000Z');
const COOL_OFF = 10_000;

/** The run's creation: every option off unless given (the lifecycle reads only the four facts). */
const OFF = { isDestroy: false, refreshOnly: false, allowConfigGeneration: false };
const created = (facts: Partial<RunCreated['data']> = {}): RunEvent => ({
  type: 'RunCreated',
  data: {
    ...{ id: ID, workspaceId: 'ws-1', organization: 'org', configurationVersionId: 'cv-1' },
    ...{ createdBy: null, source: 'tfe-api', triggerReason: 'manual', message: '' },
    ...{ refresh: true, replaceAddrs: null, targetAddrs: null, variables: [] },
    ...{ planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false },
    ...{ ...OFF, debuggingMode: false, engineVersion: null },
    ...facts,
  },
});
const e = (type: RunEvent['type'], data: object = {}) => ({ type, data }) as RunEvent;
const planned = (hasChanges = true) =>
  e('RunPlanFinished', {
    hasChanges,
    counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
    log: '',
    jsonOutput: null,
  });
const PLANNING = [e('RunPlanQueued'), e('RunPlanStarted')];
const cancelAt = (at: Date) =>
  e('RunCancelRequested', {
    comment: null,
    at: at.toISOString(),
    forceCancelAvailableAt: new Date(at.getTime() + COOL_OFF).toISOString(),
  });

const run = (...events: RunEvent[]): Spec => spec().given(STREAM, runDecider, ...events);
const when = (s: Spec, fn: (state: RunSnapshot) => readonly RunEvent[]) =>
  s.when(decide(STREAM, runDecider, fn));

describe('run commands', () => {
  it('create: a new run is pending; a second create of the same id is refused', () => {
    when(spec(), createRun(created().data as RunCreated['data'])).then([{ type: 'RunCreated' }]);
    when(run(created()), createRun(created().data as RunCreated['data'])).refused(
      ConflictError,
      'already exists',
    );
  });

  it('every command on a run that does not exist is a not-found', () => {
    when(spec(), confirmRun(ID, null)).refused(NotFoundError, `run ${ID} not found`);
    when(spec(), commentOnRun(ID, { id: 'c1', body: 'hi', by: null })).refused(
      NotFoundError,
      'not found',
    );
  });

  it('apply: confirms a run paused after its plan, and only such a run', () => {
    const paused = [created(), ...PLANNING, planned(), e('RunPlanStageCompleted')];
    when(run(...paused), confirmRun(ID, 'ship it')).then([
      { type: 'RunConfirmed', data: { comment: 'ship it' } },
    ]);
    when(run(created()), confirmRun(ID, null)).refused(
      ConflictError,
      'not paused for confirmation',
    );
    // planned but the plan stage still running (more stages to come): not yet confirmable
    when(run(created(), ...PLANNING, planned()), confirmRun(ID, null)).refused(
      ConflictError,
      'status planned',
    );
  });

  it('discard: a pending run or a plan awaiting confirmation; never a speculative plan or a finished run', () => {
    when(run(created()), discardRun(ID, null)).then([{ type: 'RunDiscarded' }]);
    when(run(created(), ...PLANNING, planned()), discardRun(ID, 'no')).then([
      { type: 'RunDiscarded', data: { comment: 'no', reason: 'user' } },
    ]);
    when(run(created({ planOnly: true }), ...PLANNING, planned()), discardRun(ID, null)).refused(
      ConflictError,
      'not paused for confirmation or priority',
    );
    when(
      run(created(), e('RunErrored', { phase: null, message: 'x', log: null })),
      discardRun(ID, null),
    ).refused(ConflictError, 'status errored');
  });

  it('cancel: once, while planning or applying; force-cancel only after it and after the cool-off', () => {
    when(run(created(), ...PLANNING), requestCancel(ID, null, T0, COOL_OFF)).then([
      {
        type: 'RunCancelRequested',
        data: { at: T0.toISOString(), forceCancelAvailableAt: '2026-01-01T00:00:10.000Z' },
      },
    ]);
    when(run(created()), requestCancel(ID, null, T0, COOL_OFF)).refused(
      ConflictError,
      'not planning or applying',
    );
    when(run(created(), ...PLANNING, cancelAt(T0)), requestCancel(ID, null, T0, COOL_OFF)).refused(
      ConflictError,
      'already being canceled',
    );
    when(run(created(), ...PLANNING), forceCancel(ID, null, T0)).refused(
      ConflictError,
      'was not canceled non-forcefully first',
    );
    const early = new Date(T0.getTime() + COOL_OFF - 1);
    when(run(created(), ...PLANNING, cancelAt(T0)), forceCancel(ID, null, early)).refused(
      ConflictError,
      'cannot be force-canceled until 2026-01-01T00:00:10.000Z',
    );
    const late = new Date(T0.getTime() + COOL_OFF);
    when(run(created(), ...PLANNING, cancelAt(T0)), forceCancel(ID, null, late)).then([
      { type: 'RunForceCanceled', data: { at: late.toISOString() } },
    ]);
  });

  it('force-execute: only a pending run', () => {
    when(run(created()), requestForceExecute(ID)).then([{ type: 'RunForceExecuteRequested' }]);
    when(run(created(), ...PLANNING), requestForceExecute(ID)).refused(
      ConflictError,
      'is not pending (status planning)',
    );
  });

  it('the executor: a finished plan completes its stage unless more stages follow; steps out of order are refused', () => {
    when(run(created(), ...PLANNING), x.planFinished(ID, { hasChanges: false, log: '' })).then([
      { type: 'RunPlanFinished', data: { hasChanges: false } },
      { type: 'RunPlanStageCompleted' },
    ]);
    when(
      run(created(), ...PLANNING),
      x.planFinished(ID, { hasChanges: true, log: '', moreStages: true }),
    ).then([{ type: 'RunPlanFinished' }]);
    when(run(created()), x.applyStarted(ID)).refused(
      ConflictError,
      'RunApplyStarted is not allowed while run run-1 is pending',
    );
  });

  it('the handler refuses an event the machine does not allow even when a decision proposes it', () => {
    when(run(created()), () => [e('RunApplyFinished', { counts: {}, log: '' })]).refused(
      IllegalTransitionError,
      'RunApplyFinished is not allowed',
    );
  });
});
