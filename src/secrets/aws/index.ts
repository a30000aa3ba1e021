import type { AwsClientFactory, ProviderDefaults } from './clients.js';
import { sdkClientFactory } from './clients.js';
import { CredsService } from './creds.js';
import type { EngineDeps } from './deps.js';
import { mountClients } from './deps.js';
import type { MountRef } from './events.js';
import {
  leaseStream,
  staticRoleStream,
  TIMER_LEASE_EXPIRY,
  TIMER_ROOT_ROTATION,
  TIMER_STATIC_ROTATION,
} from './events.js';
import { LeaseService } from './leases.js';
import type { ContextModule, Core } from '../../context.js';
import { sharesLog } from '../../config.js';
import { tokenLeasesReactor, type LeaseProvider } from '../sys/index.js';
import { mountTtls, type MountTtls } from '../sys/projection.js';
import type { ScheduleEntry } from '../../core/schedule.js';
import { CloudIntents, intentProjection } from './intents.js';
import { awsProjection } from './projection.js';
import { AwsReads } from './queries.js';
import { RoleService } from './roles.js';
import { RootService } from './root.js';
import { AWS_PATHS, awsRoutes } from './routes.js';
import { sudoOf, unauthenticatedOf } from '../route.js';
import { StaticRoleService } from './static-roles.js';

export type { AwsClientFactory, ProviderDefaults } from './clients.js';

/** Options of the engine: how to reach IAM/STS (the embedded cloud by default). */
export interface AwsContextOptions {
  clients?: AwsClientFactory;
  provider?: ProviderDefaults;
  /** The lease TTLs in force on a mount (by accessor); the system's 768h when not given. */
  mountTtls?: (accessor: string) => MountTtls;
}

/**
 * The cloud credentials engine's registry: its projection, its timers (static-role rotation,
 * lease expiry, scheduled root rotation), the engine routes for every mount of type `aws`, and
 * the lease interface the sys/leases endpoints use.
 */
export function createAwsContext(
  core: Core,
  options: AwsContextOptions = {},
): { module: ContextModule; leaseProvider: LeaseProvider } {
  const reads = new AwsReads(core.db);
  const factory = options.clients ?? sdkClientFactory({ clock: core.clock, ...options.provider });
  const deps: EngineDeps = {
    core,
    reads,
    clientsFor: mountClients(reads, core.sealer, factory),
    templateEnv: {
      now: () => core.clock.now(),
      random: (n) => core.ids.secret(n),
      uuid: () => core.ids.uuid(),
    },
    mountTtls: options.mountTtls ?? (() => mountTtls({ default_lease_ttl: 0, max_lease_ttl: 0 })),
  };
  // Static-role key cycles are resolved with the role's own IAM client (cross-account roles).
  const intents: CloudIntents = new CloudIntents(deps, (mount, name) =>
    staticRoles.iamForRole(mount, name),
  );
  const staticRoles: StaticRoleService = new StaticRoleService(deps, intents);
  const root = new RootService(deps, intents);
  const services = {
    root,
    roles: new RoleService(deps),
    creds: new CredsService(deps, root, intents),
    staticRoles,
  };
  const leases = new LeaseService(deps, root);
  const data = <T>(e: ScheduleEntry) => e.data as T;
  const module: ContextModule = {
    name: 'aws',
    streams: { lease: leaseStream, 'static-role': staticRoleStream },
    projections: [awsProjection(), intentProjection()],
    // Cloud side effects a dead process left half done are finished or undone first thing; on a
    // shared log, by the leader once they are old enough not to be another process's request.
    start: () => {
      if (!sharesLog(core.config)) void intents.recover();
    },
    lead: () => {
      if (sharesLog(core.config)) intents.sweep();
    },
    idle: () => intents.recovered(),
    // A revoked or expired token takes the leases it obtained with it.
    reactors: [tokenLeasesReactor('aws-token-leases', (t, m) => leases.revokeForToken(t, m))],
    timers: [
      {
        kind: TIMER_STATIC_ROTATION,
        fire: (e) => {
          const { accessor, name } = data<{ accessor: string; name: string }>(e);
          // Never alongside the recovery pass, which lists and deletes the same user's keys.
          return intents.recovered().then(() => staticRoles.rotateDue(accessor, name));
        },
      },
      { kind: TIMER_LEASE_EXPIRY, fire: (e) => leases.fire(data<{ leaseId: string }>(e).leaseId) },
      {
        kind: TIMER_ROOT_ROTATION,
        fire: (e) =>
          intents
            .recovered()
            .then(() => root.fireScheduled(data<{ mount: MountRef }>(e).mount, e.dueAt)),
      },
    ],
    engine: {
      type: 'aws',
      description:
        'cloud credentials (IAM users, assumed roles, federation and session tokens, static roles)',
      routes: () => awsRoutes(services),
      // Made from the declarations (src/secrets/route.ts): none is open or needs sudo today.
      sudo: sudoOf(AWS_PATHS),
      unauthenticated: unauthenticatedOf(AWS_PATHS),
      paths: AWS_PATHS,
    },
  };
  return { module, leaseProvider: leases };
}
