import Koa from 'koa';
import type { Middleware } from 'koa';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import { loadConfig, type Config } from '../../src/config.js';
import type { Core } from '../../src/context.js';
import { ManualClock } from '../../src/core/clock.js';
import { CommandHandler } from '../../src/core/command-handler.js';
import { migrate } from '../../src/core/database.js';
import { EventStore } from '../../src/core/event-store.js';
import { systemMetadata } from '../../src/core/events.js';
import { sequentialIds } from '../../src/core/ids.js';
import { silentLogger } from '../../src/core/logger.js';
import { Projections } from '../../src/core/projections.js';
import { Reactors } from '../../src/core/reactors.js';
import { scheduleProjection } from '../../src/core/schedule.js';
import { Sealer } from '../../src/core/seal.js';
import { jsonApiErrors } from '../../src/http/errors.js';
import { createRunsRateLimits, runsSurface } from '../../src/http/runs-surface.js';
import { listen, type ListeningServer } from '../../src/http/server.js';
import { createIdentityContext } from '../../src/runs/identity/index.js';
import { createRunsContext, PUBLIC_PATHS, type RunsContext } from '../../src/runs/index.js';

/**
 * The runs API in process on a loopback port: the real core, read models, reactors and HTTP
 * surface, with a fake clock and predictable ids. Tests drive it over HTTP and `settle()` the
 * reactors (the queue) instead of waiting.
 */

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (an empty object when the body is empty or not JSON). */
  json: Body;
}

/** What tests read from JSON:API documents; fields a response lacks are simply undefined. */
export interface Rel {
  data?: { type: string; id: string } | null;
  links?: Record<string, string>;
}
export type Attributes = {
  [key: string]: unknown;
  status: string;
  actions: Record<string, boolean>;
  permissions: Record<string, boolean>;
  'status-timestamps': Record<string, string>;
};
export interface Res {
  id: string;
  type: string;
  attributes: Attributes;
  relationships: Record<string, Rel>;
  links: Record<string, string>;
}
export interface Body {
  /** One resource or a list: both views are typed so tests read either without casts. */
  data: Res & Res[];
  included?: Res[];
  errors: { status: string; title: string; detail: string }[];
  links: Record<string, string | null>;
  meta: { pagination: Record<string, number | null> };
}

export interface RunsHarness {
  url: string;
  clock: ManualClock;
  core: Core;
  runs: RunsContext;
  projections: Projections;
  adminToken: string;
  api(
    method: string,
    path: string,
    options?: { body?: unknown; token?: string | null; raw?: Buffer; contentType?: string },
  ): Promise<ApiResponse>;
  settle(): Promise<void>;
  close(): Promise<void>;
  /** A user (not a site admin) and a token for it. */
  user(name: string): { id: string; token: string };
}

export async function startRunsHarness(
  options: { config?: Record<string, string | boolean> } = {},
): Promise<RunsHarness> {
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  const ids = sequentialIds();
  const logger = silentLogger();
  const db = new Database(':memory:');
  migrate(db);
  const config: Config = loadConfig(
    { data: tmpdir(), 'rate-limit': false, listen: '127.0.0.1:0', ...options.config },
    {},
  );
  let inline: (e: Parameters<Projections['apply']>[0]) => void = () => undefined;
  const store = new EventStore(db, clock, (e) => inline(e));
  const handler = new CommandHandler(store, clock);
  const sealer = new Sealer(Buffer.alloc(32, 7));
  const identity = createIdentityContext({
    db,
    store,
    handler,
    sealer,
    clock,
    ids,
    logger,
    config,
  });
  let server: ListeningServer | null = null;
  // The public address is known only once the server listens; upload and log URLs read it lazily.
  const core: Core = {
    db,
    store,
    handler,
    sealer,
    clock,
    ids,
    logger,
    get config() {
      return { ...config, publicAddress: server?.url ?? config.publicAddress };
    },
  };
  const runs = createRunsContext(core);
  const projections = new Projections(db, [
    scheduleProjection,
    ...identity.module.projections,
    ...runs.module.projections,
  ]);
  projections.open((after, limit) => store.readAll(after, limit));
  inline = projections.apply;
  const reactors = new Reactors(db, store, logger, runs.module.reactors ?? []);

  const limits = createRunsRateLimits(clock, config.rateLimit);
  const koa = new Koa();
  koa.use(async (ctx, next) => {
    ctx.state.requestId = 'req-test';
    await next();
  });
  const publicRoutes = runs.publicRoutes.routes() as Middleware;
  const errors = jsonApiErrors(logger);
  koa.use(async (ctx, next) => {
    if (!PUBLIC_PATHS.some((re) => re.test(ctx.path))) {
      await next();
      return;
    }
    ctx.newRouterPath = ctx.path.slice('/api/v2'.length);
    await errors(ctx, async () => {
      await publicRoutes(ctx, async () => undefined);
    });
  });
  koa.use(
    runsSurface(
      {
        clock,
        logger,
        bodyLimitBytes: config.bodyLimitBytes,
        rateLimit: config.rateLimit,
        principal: identity.principal,
        routers: [identity.module.runsRoutes!, runs.module.runsRoutes!],
      },
      limits,
    ),
  );
  server = await listen(koa.callback(), '127.0.0.1', 0);

  const meta = systemMetadata('test');
  const admin = identity.commands.createUser(
    { username: 'admin', email: 'admin@example.com', admin: true },
    meta,
  );
  const tokenFor = (id: string, name: string) =>
    identity.commands.createToken(
      {
        kind: 'user',
        ownerId: id,
        ownerName: name,
        organization: null,
        description: null,
        expiredAt: null,
        createdBy: null,
      },
      meta,
    ).token;
  const adminToken = tokenFor(admin.id, 'admin');
  const url = server.url;

  return {
    url,
    clock,
    core,
    runs,
    projections,
    adminToken,
    async api(method, path, o = {}) {
      const headers: Record<string, string> = {};
      const token = o.token === undefined ? adminToken : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      let body: string | Uint8Array | undefined;
      if (o.raw !== undefined) {
        body = new Uint8Array(o.raw);
        headers['content-type'] = o.contentType ?? 'application/octet-stream';
      } else if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        headers['content-type'] = o.contentType ?? 'application/vnd.api+json';
      }
      const res = await fetch(path.startsWith('http') ? path : `${url}/api/v2${path}`, {
        method,
        headers,
        body,
      });
      const text = await res.text();
      let json = {} as Body;
      try {
        if (text !== '') json = JSON.parse(text) as Body;
      } catch {
        // not JSON: tests look at `text`
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    settle: () => reactors.settle(),
    async close() {
      await server?.close();
      db.close();
    },
    user(name) {
      const u = identity.commands.createUser(
        { username: name, email: `${name}@example.com`, admin: false },
        meta,
      );
      return { id: u.id, token: tokenFor(u.id, name) };
    },
  };
}

let tarball: Buffer | null = null;

/** A small valid configuration as a `.tar.gz` (one `main.tf`). */
export function configTarball(): Buffer {
  if (tarball !== null) return tarball;
  const dir = mkdtempSync(join(tmpdir(), 'keel-cfg-'));
  writeFileSync(join(dir, 'main.tf'), 'resource "null_resource" "a" {}\n');
  tar.c({ gzip: true, portable: true, cwd: dir, file: `${dir}.tgz`, sync: true }, ['.']);
  tarball = readFileSync(`${dir}.tgz`);
  return tarball;
}
