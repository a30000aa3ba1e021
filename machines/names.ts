/**
 * The names of the lifecycle machines, as `keel diagram` and the state-diagram pages know them.
 * Kept apart from `index.ts` so the CLI's help can list them without loading a machine; `index.ts`
 * registers exactly these (its type refuses a name missing or extra).
 */
export const MACHINE_NAMES = [
  'run',
  'configuration-version',
  'certificate',
  'static-role',
  'lease',
  'acme-account',
  'acme-order',
  'acme-authorization',
  'acme-challenge',
] as const;

export type MachineName = (typeof MACHINE_NAMES)[number];
