import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { jobCommands, jobKind } from '../../support/ui-job-machine.js';
import type { UiServer } from '../../support/ui-server.js';
import { http, startUiServer } from '../../support/ui-server.js';

interface Envelope<T> {
  data: T;
  request_id: string;
}

const json = async <T>(res: Response): Promise<T> => ((await res.json()) as Envelope<T>).data;

type Ev = { position: number; stream: string; type: string; actor: { name: string } };

describe('/v1/sys/audit endpoints', () => {
  let s: UiServer;

  beforeEach(async () => {
    s = await startUiServer({ streamKinds: [jobKind] });
    const jobs = jobCommands(s.app);
    const secret = s.app.core.sealer.seal('hunter2');
    jobs.append('job-1', [{ type: 'JobCreated', data: { name: 'one', secret } }], 'alice', 'req-a');
    s.clock.advance(1000);
    jobs.append(
      'job-1',
      [
        { type: 'JobQueued', data: {} },
        { type: 'JobStarted', data: {} },
      ],
      'bob',
      'req-b',
    );
    s.clock.advance(1000);
    jobs.append('job-1', [{ type: 'JobNoted', data: { note: 'slow' } }], 'alice', 'req-c');
    jobs.append('job-2', [{ type: 'JobCreated', data: { name: 'two' } }], 'bob', 'req-d');
  });
  afterEach(async () => s.close());

  it('folds a stream server-side: the state as of every event', async () => {
    const res = await s.v1('sys/audit/streams/job-1');
    expect(res.status).toBe(200);
    const h = await json<{
      machine: string;
      initial: { state: string };
      history: {
        type: string;
        state: string;
        leaves: string[];
        actor: { name: string };
        request_id: string;
        time: string;
      }[];
    }>(res);
    expect(h.machine).toBe('job');
    expect(h.initial.state).toBe('none');
    expect(h.history.map((e) => [e.type, e.state, e.actor.name, e.request_id])).toEqual([
      ['JobCreated', 'pending', 'alice', 'req-a'],
      ['JobQueued', 'queued', 'bob', 'req-b'],
      ['JobStarted', 'working', 'bob', 'req-b'],
      ['JobNoted', 'working', 'alice', 'req-c'],
    ]);
    expect(h.history[1]!.time).toBe('2026-01-01T00:00:01.000Z');
    expect(h.history[0]!.leaves).toEqual(['pending']);
  });

  it('reads streams whose names hold slashes and colons (URL-encoded)', async () => {
    jobCommands(s.app).append('job-a/b:c', [{ type: 'JobCreated', data: { name: 'x' } }]);
    const res = await s.v1(`sys/audit/streams/${encodeURIComponent('job-a/b:c')}`);
    expect(res.status).toBe(200);
    const h = await json<{ stream: string; machine: string }>(res);
    expect(h).toMatchObject({ stream: 'job-a/b:c', machine: 'job' });
  });

  it('gives the history of a stream no machine folds, without states', async () => {
    // The bootstrap's streams (users, tokens, mounts) belong to no machine.
    const all = await json<{ events: Ev[] }>(await s.v1('sys/audit/events?limit=500'));
    const other = all.events.find((e) => !e.stream.startsWith('job-'))!;
    const hist = await json<{
      machine: string | null;
      initial: unknown;
      history: { state: string }[];
    }>(await s.v1(`sys/audit/streams/${encodeURIComponent(other.stream)}`));
    expect(hist.machine).toBeNull();
    expect(hist.initial).toBeNull();
    expect(hist.history.every((e) => e.state === '')).toBe(true);
  });

  it('shows sealed fields as hmac:… and never the plaintext', async () => {
    const text = await (await s.v1('sys/audit/events?stream=job-1&type=JobCreated')).text();
    expect(text).toMatch(/"secret":"hmac:[0-9a-f]{64}"/);
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('$sealed');
    const history = await (await s.v1('sys/audit/streams/job-1')).text();
    expect(history).toMatch(/"secret":"hmac:[0-9a-f]{64}"/);
    expect(history).not.toContain('$sealed');
  });

  it('filters the timeline by stream, type, actor and time, newest first', async () => {
    const byActor = await json<{ events: Ev[] }>(
      await s.v1('sys/audit/events?actor=alice&stream_prefix=job-'),
    );
    expect(byActor.events.map((e) => e.type)).toEqual(['JobNoted', 'JobCreated']);
    const byAccessor = await json<{ events: Ev[] }>(
      await s.v1('sys/audit/events?actor=acc-bob&type=JobCreated'),
    );
    expect(byAccessor.events.map((e) => e.stream)).toEqual(['job-2']);
    const window = await json<{ events: Ev[] }>(
      await s.v1(
        'sys/audit/events?stream=job-1&since=2026-01-01T00:00:01Z&until=2026-01-01T00:00:01.500Z',
      ),
    );
    expect(window.events.map((e) => e.type)).toEqual(['JobStarted', 'JobQueued']);
    const page = await json<{ events: Ev[]; next_before: number | null }>(
      await s.v1('sys/audit/events?stream_prefix=job-&limit=2'),
    );
    expect(page.events).toHaveLength(2);
    expect(page.next_before).toBe(page.events[1]!.position);
    const older = await json<{ events: Ev[]; next_before: number | null }>(
      await s.v1(`sys/audit/events?stream_prefix=job-&limit=2&before=${page.next_before}`),
    );
    expect(older.events[0]!.position).toBeLessThan(page.events[1]!.position);
  });

  it('counts streams in each state and lists them', async () => {
    const m = await json<{
      machines: { name: string; states: { name: string; count: number; final: boolean }[] }[];
    }>(await s.v1('sys/audit/machines'));
    const job = m.machines.find((x) => x.name === 'job')!;
    expect(Object.fromEntries(job.states.map((st) => [st.name, st.count]))).toMatchObject({
      working: 1,
      pending: 1,
      done: 0,
    });
    expect(job.states.find((st) => st.name === 'done')!.final).toBe(true);
    const list = await json<{ streams: { stream: string; state: string }[] }>(
      await s.v1('sys/audit/machines/job/streams'),
    );
    expect(list.streams).toEqual([
      { stream: 'job-1', state: 'working', version: 4 },
      { stream: 'job-2', state: 'pending', version: 1 },
    ]);
  });

  it('renders the diagram as SVG with counts, DOT with a highlight, and mermaid', async () => {
    const svg = await s.v1('sys/audit/machines/job/diagram?counts=true');
    expect(svg.headers.get('content-type')).toContain('image/svg+xml');
    const text = await svg.text();
    expect(text).toContain('<svg');
    expect(text).toMatch(/id="state(-|&#45;)working"/);
    expect(text).toMatch(/working[\s\S]*\(1\)/);
    const dot = await (
      await s.v1('sys/audit/machines/job/diagram?format=dot&highlight=failed')
    ).text();
    expect(dot).toMatch(/"job\.failed" \[[^\]]*fillcolor="#ffd54f"/);
    const mermaid = await (await s.v1('sys/audit/machines/job/diagram?format=mermaid')).text();
    expect(mermaid).toContain('working --> done: JobFinished [succeeded]');
  });

  it('reports the chain verification status', async () => {
    const v = await json<{ ok: boolean; events: number; anchors: number }>(
      await s.v1('sys/audit/verify'),
    );
    expect(v).toEqual({ ok: true, events: s.app.core.store.lastPosition(), anchors: 0 });
    s.app.core.db.prepare("UPDATE events SET data = '{}' WHERE position = 2").run();
    const broken = await json<{ ok: boolean; position: number }>(await s.v1('sys/audit/verify'));
    expect(broken).toMatchObject({ ok: false, position: 2 });
  });

  it('lists the schedule (due times) from its read model', async () => {
    s.app.core.db
      .prepare("INSERT INTO schedule (key, owner, kind, due_at, data) VALUES (?, 'jobs', ?, ?, ?)")
      .run('job-1:retry', 'job-retry', '2026-01-02T00:00:00.000Z', '{"n":1}');
    const res = await json<{ entries: unknown[] }>(await s.v1('sys/audit/schedule'));
    expect(res.entries).toEqual([
      { key: 'job-1:retry', kind: 'job-retry', due_at: '2026-01-02T00:00:00.000Z', data: { n: 1 } },
    ]);
  });

  it('answers a watch as soon as the log grows, and at once when it already has', async () => {
    const last = s.app.core.store.lastPosition();
    expect(await json(await s.v1(`sys/audit/watch?after=${last - 1}`))).toEqual({
      position: last,
    });
    expect(await json(await s.v1(`sys/audit/watch?after=${last}&timeout=0`))).toEqual({
      position: last,
    });
    // Whether the append lands before or while the request is held, the answer is the new position.
    const pending = s.v1(`sys/audit/watch?after=${last}&timeout=30`);
    jobCommands(s.app).append('job-2', [{ type: 'JobQueued', data: {} }]);
    expect(await json(await pending)).toEqual({ position: last + 1 });
  });

  describe('errors', () => {
    const cases: [string, number, RegExp][] = [
      ['sys/audit/events?since=yesterday', 400, /since must be an ISO 8601 time/],
      ['sys/audit/events?limit=0', 400, /limit must be a positive integer/],
      ['sys/audit/events?limit=100000', 400, /limit must be at most 500/],
      ['sys/audit/events?before=x', 400, /before must be a positive integer/],
      [
        'sys/audit/events?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z',
        400,
        /since must not be after until/,
      ],
      ['sys/audit/streams/job-404', 404, /stream "job-404" has no events/],
      ['sys/audit/machines/nope', 404, /unsupported path/],
      ['sys/audit/machines/nope/streams', 404, /no machine named "nope"/],
      ['sys/audit/machines/nope/diagram', 404, /no machine named "nope"/],
      ['sys/audit/machines/job/diagram?format=png', 400, /format must be svg, dot or mermaid/],
      ['sys/audit/machines/job/diagram?counts=maybe', 400, /counts must be true or false/],
      ['sys/audit/watch?after=-1', 400, /after must be a position/],
      ['sys/audit/watch?timeout=600', 400, /timeout must be 0 to 60 seconds/],
    ];
    it.each(cases)('GET %s → %i', async (path, status, message) => {
      const before = s.app.core.store.lastPosition();
      const res = await s.v1(path);
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = (await res.json()) as { errors: string[] };
      expect(body.errors.join('\n')).toMatch(message);
      expect(s.app.core.store.lastPosition()).toBe(before);
    });

    it('refuses a missing or bad token, and a token whose policy does not grant read', async () => {
      expect((await http(`${s.url}/v1/sys/audit/events`)).status).toBe(403);
      expect((await s.v1('sys/audit/events', 'not-a-token')).status).toBe(403);
      const token = await createToken(s, ['default']);
      expect((await s.v1('sys/audit/events', token)).status).toBe(403);
    });

    it('lets a policy granting read on sys/audit/* in', async () => {
      const write = await http(`${s.url}/v1/sys/policies/acl/auditor`, {
        method: 'PUT',
        headers: { 'X-Secrets-Token': s.boot.secrets.root_token },
        body: JSON.stringify({ policy: 'path "sys/audit/*" { capabilities = ["read"] }' }),
      });
      expect(write.status).toBe(204);
      const token = await createToken(s, ['auditor']);
      expect((await s.v1('sys/audit/events', token)).status).toBe(200);
      expect((await s.v1('sys/mounts', token)).status).toBe(403);
    });

    it('refuses writes (405)', async () => {
      const res = await http(`${s.url}/v1/sys/audit/events`, {
        method: 'POST',
        headers: { 'X-Secrets-Token': s.boot.secrets.root_token },
        body: '{}',
      });
      expect(res.status).toBe(405);
    });
  });
});

async function createToken(s: UiServer, policies: string[]): Promise<string> {
  const created = await http(`${s.url}/v1/auth/token/create`, {
    method: 'POST',
    headers: { 'X-Secrets-Token': s.boot.secrets.root_token },
    body: JSON.stringify({ policies }),
  });
  return ((await created.json()) as { auth: { client_token: string } }).auth.client_token;
}

describe('/ui', () => {
  let s: UiServer;
  beforeEach(async () => {
    s = await startUiServer({ streamKinds: [jobKind] });
  });
  afterEach(async () => s.close());

  it('serves the page and its modules with a strict policy and no external references', async () => {
    const redirect = await http(`${s.url}/ui`, {});
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('/ui/');
    for (const file of [
      '',
      'app.js',
      'lib.js',
      'views.js',
      'runs-views.js',
      'run-view.js',
      'run-sections.js',
      'download.js',
      'secrets-view.js',
      'cert-view.js',
      'stream-view.js',
      'machines-view.js',
      'style.css',
    ]) {
      const res = await http(`${s.url}/ui/${file}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("default-src 'self'");
      expect(await res.text()).not.toMatch(/https?:\/\//);
    }
    expect((await http(`${s.url}/ui/`)).headers.get('content-type')).toContain('text/html');
  });

  it('sends a browser opening the daemon address to the page', async () => {
    for (const method of ['GET', 'HEAD']) {
      const res = await http(`${s.url}/`, { method });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('/ui/');
    }
    // Only the root: any other unknown address stays the API's 404.
    expect((await http(`${s.url}/nowhere`)).status).toBe(404);
    expect((await http(`${s.url}/`, { method: 'POST' })).status).toBe(404);
  });

  it('answers 404 for unknown files and 405 for writes', async () => {
    expect((await http(`${s.url}/ui/%2e%2e/app.ts`)).status).toBe(404);
    expect((await http(`${s.url}/ui/nope.js`)).status).toBe(404);
    expect((await http(`${s.url}/ui/`, { method: 'POST' })).status).toBe(405);
  });
});
