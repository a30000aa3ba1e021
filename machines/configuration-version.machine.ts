import { setup } from 'xstate';

/**
 * A configuration version: created `pending`, then one upload makes it `uploaded` (runs may use it)
 * or `errored` (the archive was refused). State names are the wire values of `status`.
 */

export type ConfigurationVersionMachineEvent =
  | { type: 'ConfigurationVersionCreated'; data: object }
  | { type: 'ConfigurationVersionUploaded'; data: object }
  | { type: 'ConfigurationVersionErrored'; data: object }
  | { type: 'ConfigurationVersionArchived'; data: object };

/** Every status a configuration version can have. */
export const CONFIGURATION_VERSION_STATUSES = [
  'pending',
  'uploaded',
  'errored',
  'archived',
] as const;
export type ConfigurationVersionStatus = (typeof CONFIGURATION_VERSION_STATUSES)[number];

/** The configuration version lifecycle machine. */
export const configurationVersionMachine = setup({
  types: { events: {} as ConfigurationVersionMachineEvent },
}).createMachine({
  id: 'configurationVersion',
  initial: 'none',
  states: {
    none: { on: { ConfigurationVersionCreated: 'pending' } },
    pending: {
      on: { ConfigurationVersionUploaded: 'uploaded', ConfigurationVersionErrored: 'errored' },
    },
    uploaded: { on: { ConfigurationVersionArchived: 'archived' } },
    errored: { type: 'final' },
    archived: { type: 'final' },
  },
});

export type ConfigurationVersionMachine = typeof configurationVersionMachine;
