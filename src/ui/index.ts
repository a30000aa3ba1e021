import { readFileSync } from 'node:fs';
import type { Middleware } from 'koa';
import type { Core } from '../context.js';
import { AppendWatch, auditScope, type AuditScope } from './audit-routes.js';
import type { StreamKind } from './streams.js';
import { StreamRegistry } from './streams.js';

export type { StreamKind } from './streams.js';
export type { AuditScope } from './audit-routes.js';
export { StreamRegistry, streamKinds } from './streams.js';

/** The page's files, served from memory: the page needs nothing from outside the daemon. */
const ASSETS: Readonly<Record<string, string>> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'lib.js': 'text/javascript; charset=utf-8',
  'views.js': 'text/javascript; charset=utf-8',
  'runs-views.js': 'text/javascript; charset=utf-8',
  'run-view.js': 'text/javascript; charset=utf-8',
  'run-sections.js': 'text/javascript; charset=utf-8',
  'download.js': 'text/javascript; charset=utf-8',
  'secrets-view.js': 'text/javascript; charset=utf-8',
  'cert-view.js': 'text/javascript; charset=utf-8',
  'stream-view.js': 'text/javascript; charset=utf-8',
  'machines-view.js': 'text/javascript; charset=utf-8',
  'authorize-view.js': 'text/javascript; charset=utf-8',
  'tokens-view.js': 'text/javascript; charset=utf-8',
  'style.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
  'access-view.js': 'text/javascript; charset=utf-8',
};

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  // Everything comes from the daemon itself; no inline script, no framing, no referrer leaks.
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-cache',
};

function loadAssets(): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const name of Object.keys(ASSETS)) {
    files.set(name, readFileSync(new URL(`./assets/${name}`, import.meta.url)));
  }
  return files;
}

/** Serve the page under `/ui/`. The files carry no data; every datum is fetched with a token. */
function pageMiddleware(files: ReadonlyMap<string, Buffer>): Middleware {
  return async (ctx) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.status = 405;
      ctx.set('Allow', 'GET, HEAD');
      ctx.type = 'text/plain';
      ctx.body = 'method not allowed';
      return;
    }
    if (ctx.path === '/ui') {
      ctx.redirect('/ui/');
      return;
    }

    const name = ctx.path === '/ui/' ? 'index.html' : ctx.path.slice('/ui/'.length);
    const body = files.get(name);
    const type = ASSETS[name];
    if (body === undefined || type === undefined) {
      ctx.status = 404;
      ctx.type = 'text/plain';
      ctx.body = 'not found';
      return;
    }
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) ctx.set(k, v);
    ctx.status = 200;
    ctx.type = type;
    ctx.body = body;
  };
}

export interface Ui {
  readonly registry: StreamRegistry;
  /**
   * What the system backend serves the read-only `/v1/sys/audit/…` paths with (they are declared
   * in audit-routes.ts and listed with the backend's own, sys/paths-all.ts).
   */
  readonly audit: AuditScope;
  /** The page, mounted at `/ui`. */
  readonly page: Middleware;
  /** Answer every held watch request (shutdown). */
  close(): void;
}

/** The state diagrams, stream histories and audit timeline: the page and its endpoints. */
export function createUi(core: Core, kinds: readonly StreamKind[]): Ui {
  const registry = new StreamRegistry(kinds, core);
  const watch = new AppendWatch(core.store);
  return {
    registry,
    audit: auditScope({ store: core.store, registry, watch }),
    page: pageMiddleware(loadAssets()),
    close: () => watch.close(),
  };
}
