import type Router from '@koa/router';
import type { Clock } from './core/clock.js';
import type { CommandHandler } from './core/command-handler.js';
import type { Db } from './core/database.js';
import type { EventStore } from './core/event-store.js';
import type { Ids } from './core/ids.js';
import type { Logger } from './core/logger.js';
import type { Projection } from './core/projections.js';
import type { Reactor } from './core/reactors.js';
import type { Timer } from './core/schedule.js';
import type { Sealer } from './core/seal.js';
import type { StreamLocation } from './core/streams.js';
import type { Config } from './config.js';
import type { Mount } from './http/types.js';
import type { PathSchema } from './secrets/fields.js';

/** What every bounded context is built from: the core services, passed as arguments. */
export interface Core {
  readonly db: Db;
  readonly store: EventStore;
  readonly handler: CommandHandler;
  readonly sealer: Sealer;
  readonly clock: Clock;
  readonly ids: Ids;
  readonly logger: Logger;
  readonly config: Config;
}

/** A secrets engine type that can be mounted at any path. */
export interface SecretsEngine {
  readonly type: string;
  readonly description: string;
  /** Routes relative to the mount (`/roles/:name`), built once per mount. */
  routes(mount: Mount): Router;
  /** Relative paths (without the leading slash) that need the sudo capability. */
  readonly sudo?: readonly RegExp[];
  /** Relative paths the engine authenticates itself (ACME's JWS): no token, bodies left unparsed. */
  readonly selfAuthenticated?: readonly RegExp[];
  /**
   * Relative path patterns (the ACL's syntax: `+` one segment, a trailing `*` any rest) served
   * without a token, as the reference's `PathsSpecial.Unauthenticated`.
   */
  readonly unauthenticated?: readonly string[];
  /** Every path the engine serves, with its declared fields (the OpenAPI document's source). */
  readonly paths: readonly PathSchema[];
}

/** A bounded context's registry: what it adds to the daemon. */
export interface ContextModule {
  readonly name: string;
  readonly projections: readonly Projection[];
  readonly reactors?: readonly Reactor[];
  readonly timers?: readonly Timer[];
  /** Mounted under `/api/v2`. */
  readonly runsRoutes?: Router;
  /** Mounted under `/api/v2` before authentication and body parsing: the secret is in the address. */
  readonly runsPublicRoutes?: Router;
  readonly engine?: SecretsEngine;
  /** Where the streams of this context's lifecycle machines live, by machine name (the audit page). */
  readonly streams?: Readonly<Record<string, StreamLocation>>;
  /** Called once when the daemon starts (or a test first settles): resume work a restart interrupted. */
  readonly start?: () => void;
  /** Called on every poll while this process leads (ADR 0080): renew and take over claimed work. */
  readonly lead?: () => void;
  /** The daemon is closing: stop background work without recording more (a restart resumes it). */
  readonly stop?: () => void;
  /** Resolves when the context's background work (e.g. running plans) has finished. */
  readonly idle?: () => Promise<void>;
}
