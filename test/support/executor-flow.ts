import { afterAll, beforeAll, expect } from 'vitest';
import { httpRequest, startTestApp, type TestApp } from './app.js';
import type { RunningDaemon } from './daemon.js';
import { tarball } from './configuration.js';

/** JSON:API documents as the executor tests read them. */
export interface Doc {
  data: {
    id: string;
    type: string;
    attributes: Record<string, unknown>;
    relationships: Record<string, { data: { id: string } | null }>;
  };
  errors?: { status: string; title: string; detail: string }[];
}
export interface ListDoc {
  data: Doc['data'][];
}

/** What a flow drives: the app in process, or the real daemon (see {@link daemonTarget}). */
export type FlowTarget = Pick<TestApp, 'request' | 'tokens'>;

/** The real daemon as a flow's target. */
export const daemonTarget = (daemon: RunningDaemon): FlowTarget => ({
  request: (method, path, options) => httpRequest(daemon.url, method, path, options),
  tokens: daemon.bootstrap(),
});

/** The app in process for a test file with a flow over it: started before all, closed after. */
export function flowApp(options: Parameters<typeof startTestApp>[0] = {}): {
  readonly t: TestApp;
  readonly flow: Flow;
} {
  const started = {} as { t: TestApp; flow: Flow };
  beforeAll(async () => {
    started.t = await startTestApp(options);
    started.flow = new Flow(started.t);
  });
  afterAll(async () => {
    await started.t.close();
  });
  return started;
}

/**
 * A new workspace with these environment variables and `config` uploaded, one run queued and the
 * app settled: the run's status and its plan's log.
 */
export async function planWith(
  app: { readonly t: TestApp; readonly flow: Flow },
  env: Record<string, string>,
  config: Record<string, string>,
): Promise<{ status: string; log: string }> {
  const { flow, t } = app;
  const { ws } = await flow.workspace();
  for (const [key, value] of Object.entries(env)) await flow.envVar(ws, key, value);
  const run = await flow.run(ws, {}, await flow.upload(ws, config));
  await t.settle();
  return { status: await flow.status(run), log: (await flow.phase(run, 'plan')).log };
}

/** Steps of the run flow over HTTP, with the admin user's token. */
export class Flow {
  #n = 0;
  constructor(readonly t: FlowTarget) {}

  get token(): string {
    return this.t.tokens.runs.user_token;
  }

  async call<T = Doc>(
    method: string,
    path: string,
    body?: unknown,
    expected?: number,
  ): Promise<{ status: number; doc: T & { errors?: Doc['errors'] }; text: string }> {
    const res = await this.t.request(method, `/api/v2${path}`, {
      token: this.token,
      ...(body === undefined ? {} : { body }),
    });
    if (expected !== undefined) expect(res.status, res.text).toBe(expected);
    return { status: res.status, doc: res.json as T & { errors?: Doc['errors'] }, text: res.text };
  }

  /** An environment variable of a workspace (what the fake binary reads its switches from). */
  async envVar(ws: string, key: string, value: string): Promise<void> {
    await this.call(
      'POST',
      `/workspaces/${ws}/vars`,
      { data: { type: 'vars', attributes: { key, value, category: 'env' } } },
      201,
    );
  }

  async workspace(
    attributes: Record<string, unknown> = {},
  ): Promise<{ org: string; ws: string; name: string }> {
    const org = `org-${++this.#n}`;
    await this.call(
      'POST',
      '/organizations',
      { data: { type: 'organizations', attributes: { name: org, email: `${org}@example.com` } } },
      201,
    );
    const ws = await this.call(
      'POST',
      `/organizations/${org}/workspaces`,
      { data: { type: 'workspaces', attributes: { name: `ws-${this.#n}`, ...attributes } } },
      201,
    );
    return { org, ws: ws.doc.data.id, name: `ws-${this.#n}` };
  }

  /** A configuration version holding `files`, uploaded through its secret upload address. */
  async upload(ws: string, files: Record<string, string>): Promise<string> {
    const cv = await this.call(
      'POST',
      `/workspaces/${ws}/configuration-versions`,
      { data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } } },
      201,
    );
    const url = new URL(String(cv.doc.data.attributes['upload-url']));
    const put = await this.t.request('PUT', url.pathname, {
      token: null,
      rawBody: tarball(files),
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(put.status, put.text).toBe(200);
    return cv.doc.data.id;
  }

  async run(
    ws: string,
    attributes: Record<string, unknown> = {},
    cv: string | null = null,
  ): Promise<string> {
    const res = await this.call(
      'POST',
      '/runs',
      {
        data: {
          type: 'runs',
          attributes,
          relationships: {
            workspace: { data: { type: 'workspaces', id: ws } },
            'configuration-version': {
              data: cv === null ? null : { type: 'configuration-versions', id: cv },
            },
          },
        },
      },
      201,
    );
    return res.doc.data.id;
  }

  async get(run: string): Promise<Doc['data']> {
    return (await this.call('GET', `/runs/${run}`, undefined, 200)).doc.data;
  }

  async status(run: string): Promise<string> {
    return String((await this.get(run)).attributes.status);
  }

  /** The plan or apply resource of a run and the text its log address serves. */
  async phase(
    run: string,
    kind: 'plan' | 'apply',
  ): Promise<{ attributes: Record<string, unknown>; log: string }> {
    const res = await this.call('GET', `/runs/${run}/${kind}`, undefined, 200);
    const url = new URL(String(res.doc.data.attributes['log-read-url']));
    const log = await this.t.request('GET', url.pathname, { token: null });
    return { attributes: res.doc.data.attributes, log: log.text };
  }

  /** A sensitive Terraform variable of the workspace. */
  async sensitiveVariable(ws: string, key: string, value: string): Promise<void> {
    const attributes = { key, value, category: 'terraform', sensitive: true };
    await this.call('POST', `/workspaces/${ws}/vars`, { data: { type: 'vars', attributes } }, 201);
  }

  /** A team granted `access` on the workspace, and its team token. */
  async teamToken(org: string, ws: string, access: string): Promise<string> {
    const team = await this.call(
      'POST',
      `/organizations/${org}/teams`,
      { data: { type: 'teams', attributes: { name: `team-${++this.#n}` } } },
      201,
    );
    const relationships = {
      team: { data: { type: 'teams', id: team.doc.data.id } },
      workspace: { data: { type: 'workspaces', id: ws } },
    };
    await this.call(
      'POST',
      '/team-workspaces',
      { data: { type: 'team-workspaces', attributes: { access }, relationships } },
      201,
    );
    const token = await this.call(
      'POST',
      `/teams/${team.doc.data.id}/authentication-token`,
      {},
      201,
    );
    return String(token.doc.data.attributes.token);
  }

  async action(run: string, action: string, expected = 202): Promise<void> {
    await this.call('POST', `/runs/${run}/actions/${action}`, {}, expected);
  }
}
