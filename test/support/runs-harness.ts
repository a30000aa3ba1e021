import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tar from 'tar';
import type { Config } from '../../src/config.js';
import type { Core } from '../../src/context.js';
import { ManualClock } from '../../src/core/clock.js';
import { systemMetadata } from '../../src/core/events.js';
import type { Projections } from '../../src/core/projections.js';
import { createIdentityCommands } from '../../src/runs/identity/commands.js';
import { identityQueries } from '../../src/runs/identity/projection.js';
import type { RunsContext } from '../../src/runs/index.js';
import { startTestApp, type TestResponse } from './app.js';

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
  options: { config?: Partial<Config>; wakeReactors?: boolean } = {},
): Promise<RunsHarness> {
  const clock = new ManualClock('2026-03-01T12:00:00.000Z');
  // Reactors (the queue) move only on settle(), so each step is observable.
  const t = await startTestApp({
    clock,
    config: options.config,
    // The harness sends the executor's commands itself (the drive* helpers), step by step.
    deps: { wakeReactorsOnAppend: options.wakeReactors ?? false, executor: false },
  });
  const { app } = t;
  const meta = systemMetadata('test');
  const identity = createIdentityCommands(app.core, identityQueries(app.core.db));
  const tokenFor = (id: string, name: string) =>
    identity.createTokenSync(
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
  const url = t.server.url;

  return {
    url,
    clock,
    core: app.core,
    runs: app.runs,
    projections: app.projections,
    adminToken: t.tokens.runs.user_token,
    async api(method, path, o = {}) {
      // A fresh connection per request, as `httpRequest` makes: a rebuild of the read models
      // blocks the event loop, on a busy machine past the server's keep-alive timeout, and the
      // next request would go out on a socket the server is closing (ECONNRESET).
      const headers: Record<string, string> = { connection: 'close' };
      const token = o.token === undefined ? t.tokens.runs.user_token : o.token;
      if (token !== null) headers.authorization = `Bearer ${token}`;
      let body: string | Uint8Array | undefined;
      if (o.raw !== undefined) {
        body = new Uint8Array(o.raw);
        headers['content-type'] = o.contentType ?? 'application/octet-stream';
      } else if (o.body !== undefined) {
        body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
        headers['content-type'] = o.contentType ?? 'application/vnd.api+json';
      }
      // Absolute addresses (upload and log URLs) carry the configured public address; the test
      // server listens on a random port, so only their path is used.
      const target = path.startsWith('http')
        ? `${url}${new URL(path).pathname}${new URL(path).search}`
        : `${url}/api/v2${path}`;
      const res = await fetch(target, { method, headers, body: body as BodyInit | undefined });
      const text = await res.text();
      let json = {} as Body;
      try {
        if (text !== '') json = JSON.parse(text) as Body;
      } catch {
        // not JSON: tests look at `text`
      }
      return { status: res.status, headers: res.headers, text, json };
    },
    settle: () => t.settle(),
    close: () => t.close(),
    user(name) {
      const u = identity.createUserSync(
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

/**
 * Over HTTP (a real daemon): organization `acme` and its workspace `prod` with `attributes`, and
 * {@link configTarball} uploaded as a configuration version that queues no run. Returns the
 * workspace id.
 */
export async function uploadedWorkspace(
  api: (method: string, path: string, body?: unknown) => Promise<TestResponse>,
  attributes: Record<string, unknown> = {},
): Promise<string> {
  const org = await api('POST', '/organizations', {
    data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } },
  });
  if (org.status !== 201) throw new Error(`organization not made: ${org.text}`);
  const ws = await api('POST', '/organizations/acme/workspaces', {
    data: { type: 'workspaces', attributes: { name: 'prod', ...attributes } },
  });
  const wsId = (ws.json as { data: { id: string } }).data.id;
  const cv = await api('POST', `/workspaces/${wsId}/configuration-versions`, {
    data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } },
  });
  const upload = (cv.json as { data: { attributes: Record<string, string> } }).data.attributes[
    'upload-url'
  ]!;
  const put = await fetch(upload, {
    method: 'PUT',
    headers: { connection: 'close' },
    body: new Uint8Array(configTarball()),
  });
  if (put.status !== 200) throw new Error(`configuration not uploaded: ${put.status}`);
  return wsId;
}

/** Over HTTP: a run created on workspace `wsId` (POST /runs, no attributes). Returns its id. */
export async function queuedRun(
  api: (method: string, path: string, body?: unknown) => Promise<TestResponse>,
  wsId: string,
): Promise<string> {
  const run = await api('POST', '/runs', {
    data: {
      type: 'runs',
      attributes: {},
      relationships: { workspace: { data: { type: 'workspaces', id: wsId } } },
    },
  });
  if (run.status !== 201) throw new Error(`run not created: ${run.status} ${run.text}`);
  return (run.json as { data: { id: string } }).data.id;
}
