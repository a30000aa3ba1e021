import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';
import { expectEachProjectionRebuildsAlone } from '../../support/rebuild.js';

const SECRET = 'hunter2-state-secret';
const CONFIG = {
  'main.tf': `resource "aws_instance" "web" {\n  ami           = "ami-123"\n  instance_type = "t3.micro"\n}\n\noutput "id" {\n  value = aws_instance.web.id\n}\n\noutput "token" {\n  value     = "${SECRET}"\n  sensitive = true\n}\n`,
};

const started = flowApp();

/** Every read the four route groups serve from the run, state and configuration read models. */
async function reads(run: string, cv: string, ws: string, sv: string) {
  const { t, flow } = started;
  const paths = [
    `/runs/${run}/run-events`,
    `/runs/${run}/comments`,
    `/configuration-versions/${cv}/download`,
    `/state-versions/${sv}`,
    `/state-versions/${sv}/download`,
    `/state-versions/${sv}/outputs`,
    `/workspaces/${ws}/current-state-version`,
    `/workspaces/${ws}/current-state-version-outputs`,
  ];
  const out: Record<string, { status: number; text: string }> = {};
  for (const path of paths) {
    const res = await t.request('GET', `/api/v2${path}`, { token: flow.token });
    out[path] = { status: res.status, text: res.text };
  }
  return out;
}

describe('runs read models rebuilt from the log', () => {
  it('serve the same run events, comments, archives and state documents after a rebuild', async () => {
    const { t, flow } = started;
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    await flow.call(
      'POST',
      `/runs/${run}/comments`,
      {
        data: { attributes: { body: 'looks good' } },
      },
      201,
    );
    await flow.action(run, 'apply');
    await t.settle();
    expect(await flow.status(run)).toBe('applied');
    const sv = (await flow.call('GET', `/workspaces/${ws}/current-state-version`, undefined, 200))
      .doc.data.id;

    const before = await reads(run, cv, ws, sv);
    for (const [path, r] of Object.entries(before)) expect(r.status, path).toBe(200);
    expect(before[`/runs/${run}/comments`]!.text).toContain('looks good');
    expect(before[`/runs/${run}/run-events`]!.text).toContain('"action":"commented"');
    expect(before[`/state-versions/${sv}/download`]!.text).toContain(SECRET);

    const pages = (after: number, limit: number) => t.app.core.store.readAll(after, limit);
    t.app.projections.rebuildAll(pages);
    expect(await reads(run, cv, ws, sv)).toEqual(before);
    expectEachProjectionRebuildsAlone(t.app.projections, pages);
    expect(await reads(run, cv, ws, sv)).toEqual(before);

    // the state document rests sealed in its read model, as in the log
    const dump = JSON.stringify(t.app.projections.dump());
    expect(dump).not.toContain(SECRET);
    expect(dump).toContain('$sealed');
  });
});
