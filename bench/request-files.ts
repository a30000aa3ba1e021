// Which of Keel's own files one request runs code in: for each of three requests (one per API),
// the files under src/ with at least one function called while that request was served, measured
// by V8's precise coverage in process. A request is sent once to warm up (lazy imports, caches),
// then the counters are reset and the same request is sent again and measured.
//
//   npx tsx bench/request-files.ts            # the counts and the files of each request
//   npx tsx bench/request-files.ts --counts   # the counts only
import { Session } from 'node:inspector/promises';
import { relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestApp } from '../test/support/app.js';
import { startAws } from '../test/support/aws.js';
import { startPkiApp } from '../test/support/pki-app.js';
import { configTarball } from '../test/support/runs-harness.js';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const src = resolve(root, 'src');

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

/** The src/ files whose functions ran while `send` was awaited (counters reset before it). */
async function filesOf(send: () => Promise<void>): Promise<string[]> {
  await session.post('Profiler.takePreciseCoverage');
  await send();
  const { result } = await session.post('Profiler.takePreciseCoverage');
  const files = new Set<string>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const path = fileURLToPath(script.url);
    if (!path.startsWith(`${src}/`)) continue;
    if (script.functions.some((f) => (f.ranges[0]?.count ?? 0) > 0)) {
      files.add(relative(root, path));
    }
  }
  return [...files].sort();
}

function expectStatus(what: string, status: number, want: number, text: string): void {
  if (status !== want) throw new Error(`${what}: ${status} ${text}`);
}

/** A request's own files are those of its context; the rest is shared by every request. */
interface Measured {
  request: string;
  /** The directory (under src/) of the context that serves the request. */
  context: string;
  files: string[];
}
const measured: Measured[] = [];

{
  // POST /api/v2/runs: the request alone (the executor and reactors stay still).
  const t = await startTestApp({ deps: { executor: false, wakeReactorsOnAppend: false } });
  const token = t.tokens.runs.user_token;
  const api = (method: string, path: string, body?: unknown) =>
    t.request(method, `/api/v2${path}`, { token, ...(body === undefined ? {} : { body }) });
  const org = await api('POST', '/organizations', {
    data: { type: 'organizations', attributes: { name: 'acme', email: 'ops@example.com' } },
  });
  expectStatus('POST /organizations', org.status, 201, org.text);
  const created = await api('POST', '/organizations/acme/workspaces', {
    data: { type: 'workspaces', attributes: { name: 'prod' } },
  });
  const ws = (created.json as { data: { id: string } }).data.id;
  const cv = await api('POST', `/workspaces/${ws}/configuration-versions`, {
    data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } },
  });
  const upload = (cv.json as { data: { attributes: Record<string, string> } }).data.attributes[
    'upload-url'
  ]!;
  // The upload address carries the configured public address; the server listens elsewhere.
  const put = await t.request('PUT', new URL(upload).pathname, { rawBody: configTarball() });
  expectStatus('upload', put.status, 200, put.text);
  const run = async () => {
    const res = await api('POST', '/runs', {
      data: {
        type: 'runs',
        attributes: { message: 'measured' },
        relationships: { workspace: { data: { type: 'workspaces', id: ws } } },
      },
    });
    expectStatus('POST /runs', res.status, 201, res.text);
  };
  await run();
  measured.push({ request: 'POST /api/v2/runs', context: 'runs/', files: await filesOf(run) });
  await t.close();
}

{
  const t = await startPkiApp();
  const root = await t.pki('POST', 'root/generate/internal', {
    common_name: 'Measured Root',
    key_type: 'ec',
  });
  expectStatus('root/generate', root.status, 200, root.text);
  const role = await t.pki('POST', 'roles/web', {
    allowed_domains: 'example.com',
    allow_subdomains: true,
    key_type: 'ec',
  });
  expectStatus('roles/web', role.status, 200, role.text);
  const issue = async () => {
    const res = await t.pki('POST', 'issue/web', { common_name: 'a.example.com' });
    expectStatus('issue/web', res.status, 200, res.text);
  };
  await issue();
  measured.push({
    request: 'POST /v1/pki/issue/:role',
    context: 'secrets/pki/',
    files: await filesOf(issue),
  });
  await t.close();
}

{
  const h = await startAws();
  const role = await h.v1('POST', 'aws/roles/deploy', {
    body: {
      credential_type: 'iam_user',
      policy_document: JSON.stringify({
        Version: '2012-10-17',
        Statement: [{ Effect: 'Allow', Action: 'ec2:*', Resource: '*' }],
      }),
    },
  });
  expectStatus('aws/roles/deploy', role.status, 204, role.text);
  const creds = async () => {
    const res = await h.v1('GET', 'aws/creds/deploy');
    expectStatus('aws/creds/deploy', res.status, 200, res.text);
  };
  await creds();
  measured.push({
    request: 'GET /v1/aws/creds/:role',
    context: 'secrets/aws/',
    files: await filesOf(creds),
  });
  await h.close();
}

session.disconnect();
const countsOnly = process.argv.includes('--counts');
/**
 * Which part of the tree a file belongs to, for one request: the context serving it, the shared
 * core (log, HTTP, wiring), the read models of other contexts (core/projections.ts offers every
 * event to every projection), the embedded cloud answering the engine's IAM calls (the peer, in
 * process here), or another context's code.
 */
function partOf(file: string, context: string): string {
  const path = file.slice('src/'.length);
  if (path.startsWith('cloud/')) return 'embedded cloud (the peer)';
  if (path.endsWith('/projection.ts') && !path.startsWith(context))
    return "other contexts' read models";
  if (path.startsWith(context)) return 'its context';
  if (/^(core|http|wiring)\//.test(path) || path === 'app.ts') return 'core, http, wiring';
  return 'other contexts';
}

for (const { request, context, files } of measured) {
  const parts = new Map<string, string[]>();
  for (const f of files) {
    const part = partOf(f, context);
    parts.set(part, [...(parts.get(part) ?? []), f]);
  }
  console.log(`${request}: ${files.length} files`);
  for (const [part, list] of [...parts].sort()) {
    console.log(`  ${part}: ${list.length}`);
    if (!countsOnly) for (const f of list) console.log(`    ${f}`);
  }
}
