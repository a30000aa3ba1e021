import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestApp } from '../../support/app.js';
import { startTestApp } from '../../support/app.js';
import { Flow } from '../../support/executor-flow.js';
import type { ListDoc } from '../../support/executor-flow.js';

const CONFIG = {
  'main.tf':
    'variable "ami" {}\nvariable "size" {\n  type = number\n  default = 1\n}\nvariable "secret" {\n  sensitive = true\n}\nresource "aws_instance" "web" {\n  ami = var.ami\n  size = var.size\n  token = var.secret\n}\n',
};

let t: TestApp;
let flow: Flow;
beforeAll(async () => {
  t = await startTestApp();
  flow = new Flow(t);
});
afterAll(async () => {
  await t.close();
});

const variable = (attributes: Record<string, unknown>) => ({ data: { type: 'vars', attributes } });

describe('workspace variables', () => {
  it('feed the plan, run variables override them, and sensitive values are never returned', async () => {
    const { ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'ami', value: 'ami-ws', category: 'terraform' }),
      201,
    );
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'size', value: '2', category: 'terraform', hcl: true }),
      201,
    );
    const secret = await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'secret', value: 's3cr3t', category: 'terraform', sensitive: true }),
      201,
    );
    expect(secret.doc.data.attributes).toMatchObject({
      key: 'secret',
      value: null,
      sensitive: true,
    });

    const list = await flow.call<ListDoc>('GET', `/workspaces/${ws}/vars`, undefined, 200);
    expect(list.doc.data.map((v) => [v.attributes.key, v.attributes.value])).toEqual([
      ['ami', 'ami-ws'],
      ['secret', null],
      ['size', '2'],
    ]);
    expect(list.text).not.toContain('s3cr3t');

    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, { variables: [{ key: 'ami', value: '"ami-run"' }] }, cv);
    await t.settle();
    const plan = await t.request('GET', `/api/v2/runs/${run}/plan/json-output`, {
      token: flow.token,
    });
    const after = (
      plan.json as { resource_changes: { change: { after: Record<string, unknown> } }[] }
    ).resource_changes[0]?.change.after;
    expect(after).toMatchObject({ ami: 'ami-run', size: 2, token: 's3cr3t' });
    const log = (await flow.phase(run, 'plan')).log;
    expect(log).toContain('+ token = (sensitive value)');
    expect(log).not.toContain('s3cr3t');
  });

  it('update, seal on becoming sensitive, and delete', async () => {
    const { ws } = await flow.workspace();
    const created = await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'REGION', value: 'eu-west-1', category: 'env' }),
      201,
    );
    const id = created.doc.data.id;
    const updated = await flow.call(
      'PATCH',
      `/workspaces/${ws}/vars/${id}`,
      { data: { type: 'vars', attributes: { value: 'us-east-1', sensitive: true } } },
      200,
    );
    expect(updated.doc.data.attributes).toMatchObject({
      key: 'REGION',
      value: null,
      sensitive: true,
      category: 'env',
    });
    const back = await flow.call(
      'PATCH',
      `/workspaces/${ws}/vars/${id}`,
      { data: { type: 'vars', attributes: { sensitive: false } } },
      422,
    );
    expect(back.doc.errors?.[0]?.detail).toContain('cannot be made non-sensitive');
    await flow.call('DELETE', `/workspaces/${ws}/vars/${id}`, undefined, 204);
    await flow.call('DELETE', `/workspaces/${ws}/vars/${id}`, undefined, 404);
    const list = await flow.call<ListDoc>('GET', `/workspaces/${ws}/vars`, undefined, 200);
    expect(list.doc.data).toEqual([]);
  });

  it.each([
    ['a missing category', { key: 'a', value: 'x' }, '/data/attributes/category'],
    [
      'an unknown category',
      { key: 'a', value: 'x', category: 'shell' },
      '/data/attributes/category',
    ],
    ['an empty key', { key: '', value: 'x', category: 'env' }, '/data/attributes/key'],
    [
      'an env key with a dash',
      { key: 'MY-VAR', value: 'x', category: 'env' },
      'environment variable name',
    ],
    [
      'a terraform key starting with a digit',
      { key: '1x', value: 'x', category: 'terraform' },
      'terraform variable name',
    ],
  ])('refuse %s with 422 and change nothing', async (_name, attributes, detail) => {
    const { ws } = await flow.workspace();
    const res = await flow.call('POST', `/workspaces/${ws}/vars`, variable(attributes), 422);
    expect(res.doc.errors?.[0]?.detail).toContain(detail);
    const list = await flow.call<ListDoc>('GET', `/workspaces/${ws}/vars`, undefined, 200);
    expect(list.doc.data).toEqual([]);
  });

  it('refuse a duplicate key in the same category, and unknown workspaces or variables', async () => {
    const { ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'a', value: '1', category: 'terraform' }),
      201,
    );
    const dup = await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'a', value: '2', category: 'terraform' }),
      422,
    );
    expect(dup.doc.errors?.[0]?.detail).toContain('has already been taken');
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'a', value: '2', category: 'env' }),
      201,
    );
    await flow.call('GET', '/workspaces/ws-none/vars', undefined, 404);
    await flow.call(
      'PATCH',
      `/workspaces/${ws}/vars/var-none`,
      { data: { type: 'vars', attributes: { value: 'x' } } },
      404,
    );
  });

  it('a run whose HCL variable is not a literal errors with the diagnostic', async () => {
    const { ws } = await flow.workspace();
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'ami', value: 'var.other', category: 'terraform', hcl: true }),
      201,
    );
    await flow.call(
      'POST',
      `/workspaces/${ws}/vars`,
      variable({ key: 'secret', value: 'x', category: 'terraform' }),
      201,
    );
    const cv = await flow.upload(ws, CONFIG);
    const run = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(run)).toBe('errored');
    expect((await flow.phase(run, 'plan')).log).toContain('Error: Variables not allowed');
  });
});
