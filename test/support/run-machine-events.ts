import {
  RUN_EVENT_TYPES,
  type RunEventType,
  type RunMachineEvent,
} from '../../machines/run.machine.js';

const T0 = '2026-01-01T00:00:00.000Z';
const T10 = '2026-01-01T00:00:10.000Z';
const facts = { planOnly: false, savePlan: false, autoApply: false, allowEmptyApply: false };

const WITH_GUARD_DATA = new Set<RunEventType>([
  'RunCreated',
  'RunPlanFinished',
  'RunPolicyChecked',
  'RunCancelRequested',
  'RunForceCanceled',
  'RunCommented',
]);

/** The events the traversal may send, with the payload variants the guards distinguish. */
export const RUN_EVENTS: RunMachineEvent[] = [
  { type: 'RunCreated', data: facts },
  { type: 'RunCreated', data: { ...facts, planOnly: true } },
  { type: 'RunCreated', data: { ...facts, savePlan: true } },
  { type: 'RunCreated', data: { ...facts, autoApply: true } },
  { type: 'RunCreated', data: { ...facts, allowEmptyApply: true } },
  { type: 'RunPlanFinished', data: { hasChanges: true } },
  { type: 'RunPlanFinished', data: { hasChanges: false } },
  { type: 'RunPolicyChecked', data: { outcome: 'passed' } },
  { type: 'RunPolicyChecked', data: { outcome: 'soft_failed' } },
  { type: 'RunCancelRequested', data: { at: T0, forceCancelAvailableAt: T10 } },
  { type: 'RunForceCanceled', data: { at: T10 } },
  // Every other event: the guards read nothing of its data. A comment is no lifecycle step.
  ...RUN_EVENT_TYPES.filter((type) => !WITH_GUARD_DATA.has(type)).map(
    (type) => ({ type, data: {} }) as RunMachineEvent,
  ),
];
