import type { Decider } from '../../core/command-handler.js';
import { machineDecider } from '../../core/machine-decider.js';
import { certificateMachine } from '../../../machines/certificate.machine.js';
import type {
  ConfigEvent,
  ConsultationEvent,
  CrlEvent,
  IssuerEvent,
  KeyEvent,
  LeaseEvent,
  RoleEvent,
} from './events.js';

/** A certificate serial's stream folds through the certificate machine. */
export const certificateDecider = machineDecider(certificateMachine);

/** Whether an entity stream (role, key, issuer) currently holds a live entity. */
export interface Presence {
  exists: boolean;
}

const presence = <E extends { type: string }>(
  created: readonly E['type'][],
  deleted: E['type'],
): Decider<Presence, E & { data: unknown }> => ({
  initialState: () => ({ exists: false }),
  evolve: (s, e) =>
    created.includes(e.type) ? { exists: true } : e.type === deleted ? { exists: false } : s,
  // Updates need a live entity; creations are checked by the commands (POST on roles replaces).
  accepts: (s, e) => e.type === deleted || created.includes(e.type) || s.exists,
  describe: (s) => (s.exists ? 'present' : 'absent'),
});

export const roleDecider = presence<RoleEvent>(['PkiRoleWritten'], 'PkiRoleDeleted');
export const keyDecider = presence<KeyEvent>(['PkiKeyCreated'], 'PkiKeyDeleted');
export const issuerDecider = presence<IssuerEvent>(['PkiIssuerCreated'], 'PkiIssuerDeleted');

/** The mount's configuration stream has no lifecycle: every configuration event is accepted. */
export const configDecider: Decider<null, ConfigEvent> = {
  initialState: () => null,
  evolve: () => null,
};

/** A CRL stream remembers the last CRL number, so numbers only grow. */
export const crlDecider: Decider<{ number: number }, CrlEvent> = {
  initialState: () => ({ number: 0 }),
  evolve: (_s, e) => ({ number: e.data.number }),
  accepts: (s, e) => e.data.number > s.number,
  describe: (s) => `at CRL number ${s.number}`,
};

/** A stream that holds one event: a second is refused. `done` and `before` describe its state. */
const once = <E extends { type: string; data: unknown }>(
  done: string,
  before: string,
): Decider<Presence, E> => ({
  initialState: () => ({ exists: false }),
  evolve: () => ({ exists: true }),
  accepts: (s) => !s.exists,
  describe: (s) => (s.exists ? done : before),
});

/** A consultation stream holds its one record: a second under the same UUID is refused. */
export const consultationDecider = once<ConsultationEvent>('recorded', 'absent');

/** A certificate's lease ends once: a second revocation of it is refused (and not recorded). */
export const leaseDecider = once<LeaseEvent>('revoked', 'live');
