import type { Decider } from '../../core/command-handler.js';
import type { StoredEvent } from '../../core/events.js';
import { machineDecider } from '../../core/machine-decider.js';
import { leaseMachine } from '../../../machines/lease.machine.js';
import { staticRoleMachine } from '../../../machines/static-role.machine.js';
import type { ConfigEvent, RoleEvent } from './events.js';
import type { RoleEntry } from './role-schema.js';
import type { RootSettings } from './schema.js';

/**
 * Deciders of the engine's streams. Static roles and leases fold through their machines (the
 * machine refuses illegal events); the config and role streams are plain records.
 */

export interface ConfigState {
  settings: RootSettings | null;
  rootFailures: number;
}

export const configDecider: Decider<ConfigState, ConfigEvent> = {
  initialState: () => ({ settings: null, rootFailures: 0 }),
  evolve(s, e: StoredEvent<ConfigEvent>) {
    switch (e.type) {
      case 'AwsRootConfigured':
        return { settings: e.data.settings, rootFailures: 0 };
      case 'AwsRootRotated':
        return {
          settings: s.settings ? { ...s.settings, accessKey: e.data.accessKey } : null,
          rootFailures: 0,
        };
      case 'AwsRootRotationFailed':
        return { ...s, rootFailures: e.data.attempt };
      case 'AwsRootRotationSkipped':
      case 'AwsLeaseConfigured':
        return s;
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  accepts(s, e) {
    switch (e.type) {
      case 'AwsRootRotated':
      case 'AwsRootRotationFailed':
      case 'AwsRootRotationSkipped':
        return s.settings !== null && s.settings.accessKey !== '';
      case 'AwsRootConfigured':
      case 'AwsLeaseConfigured':
        return true;
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  describe: (s) => (s.settings ? 'configured' : 'unconfigured'),
};

export interface RoleState {
  role: RoleEntry | null;
}

export const roleDecider: Decider<RoleState, RoleEvent> = {
  initialState: () => ({ role: null }),
  evolve(_s, e: StoredEvent<RoleEvent>) {
    switch (e.type) {
      case 'AwsRoleWritten':
        return { role: e.data.role };
      case 'AwsRoleDeleted':
        return { role: null };
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  accepts: (s, e) => e.type === 'AwsRoleWritten' || s.role !== null,
  describe: (s) => (s.role ? 'present' : 'absent'),
};

export const staticRoleDecider = machineDecider(staticRoleMachine);
export const leaseDecider = machineDecider(leaseMachine);
