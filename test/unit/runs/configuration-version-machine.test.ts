import { describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  CONFIGURATION_VERSION_STATUSES,
  configurationVersionMachine as m,
  type ConfigurationVersionMachineEvent,
} from '../../../machines/configuration-version.machine.js';

const e = (type: ConfigurationVersionMachineEvent['type']) => ({ type, data: {} });

function fold(events: ConfigurationVersionMachineEvent[]) {
  let [s] = initialTransition(m);
  for (const ev of events) {
    expect(s.can(ev), `${ev.type} in ${String(s.value)}`).toBe(true);
    [s] = transition(m, s, ev);
  }
  return s;
}

describe('configuration version machine', () => {
  it('has a state per status; errored and archived are final', () => {
    for (const s of CONFIGURATION_VERSION_STATUSES) expect(m.root.states[s], s).toBeDefined();
    expect(m.root.states.errored!.type).toBe('final');
    expect(m.root.states.archived!.type).toBe('final');
  });

  it('takes exactly one upload', () => {
    const uploaded = fold([e('ConfigurationVersionCreated'), e('ConfigurationVersionUploaded')]);
    expect(uploaded.value).toBe('uploaded');
    expect(uploaded.can(e('ConfigurationVersionUploaded'))).toBe(false);
    expect(uploaded.can(e('ConfigurationVersionErrored'))).toBe(false);
    expect(fold([e('ConfigurationVersionCreated'), e('ConfigurationVersionErrored')]).value).toBe(
      'errored',
    );
    expect(
      fold([
        e('ConfigurationVersionCreated'),
        e('ConfigurationVersionUploaded'),
        e('ConfigurationVersionArchived'),
      ]).value,
    ).toBe('archived');
    expect(fold([e('ConfigurationVersionCreated')]).can(e('ConfigurationVersionArchived'))).toBe(
      false,
    );
  });
});
