import { describe, expect, it } from 'vitest';
import { flowApp } from '../../support/executor-flow.js';
import { secretForms } from '../../support/secret-scan.js';

/**
 * A sensitive workspace variable stays sealed everywhere Keel keeps it: the plan JSON, the plan
 * artifact, the state and the logs, in events and read models. The full plan JSON is for workspace
 * admins; readers get the redacted one.
 */

const SECRET = 'hunter2-sealed-7Qx9Zp';
const DECLARED = 'apikey-declared-42';
const CONFIG = {
  'main.tf': [
    'variable "password" {',
    '  sensitive = true',
    '}',
    'variable "api_key" {',
    '  sensitive = true',
    '}',
    'resource "aws_db_instance" "db" {',
    '  engine = "postgres"',
    '  api_key = var.api_key',
    '  password = var.password',
    '  note = "pw=${var.password}"',
    '}',
    'output "password" {',
    '  value = var.password',
    '  sensitive = true',
    '}',
    'output "engine" {',
    '  value = aws_db_instance.db.engine',
    '}',
    '',
  ].join('\n'),
};

const app = flowApp();

/** Every row of every table, events and read models alike, as text. */
function everyRow(): string[] {
  const db = app.t.app.core.db;
  const list =
    app.t.config.store.kind === 'sqlite'
      ? `SELECT name FROM sqlite_master WHERE type = 'table'`
      : `SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()`;
  const tables = db.prepare(list).all() as { name: string }[];
  return tables.flatMap(({ name }) =>
    db
      .prepare(`SELECT * FROM "${name}"`)
      .all()
      .map((row) => `${name}: ${JSON.stringify(row)}`),
  );
}

/** A workspace with the sensitive variable, a run planned and applied, and a read-only team. */
async function appliedRun() {
  const { t, flow } = app;
  const { org, ws } = await flow.workspace({ 'auto-apply': true });
  await flow.sensitiveVariable(ws, 'password', SECRET);
  // Sensitive in the configuration only: the workspace variable itself is not marked so.
  await flow.call(
    'POST',
    `/workspaces/${ws}/vars`,
    {
      data: {
        type: 'vars',
        attributes: { key: 'api_key', value: DECLARED, category: 'terraform' },
      },
    },
    201,
  );
  const cv = await flow.upload(ws, CONFIG);
  const run = await flow.run(ws, {}, cv);
  await t.settle();
  expect(await flow.status(run)).toBe('applied');
  return { ws, run, reader: await flow.teamToken(org, ws, 'read') };
}

describe('Terraform values at rest', () => {
  it('keeps the sensitive value out of every event and read model, in clear and base64', async () => {
    const { t, flow } = app;
    const { run } = await appliedRun();
    const forms = secretForms(SECRET);
    for (const row of everyRow())
      for (const form of forms)
        expect(row.includes(form), `${form} in ${row.slice(0, 80)}`).toBe(false);
    // …yet the phases saw it: the admin's plan JSON and the state hold it.
    const plan = await t.request('GET', `/api/v2/runs/${run}/plan/json-output`, {
      token: flow.token,
    });
    expect(plan.status).toBe(200);
    expect(plan.text).toContain(SECRET);
  });

  it('shows the full plan JSON to admins only; readers get the redacted plan JSON', async () => {
    const { t, flow } = app;
    const { run, reader } = await appliedRun();
    const planId = String((await flow.get(run)).relationships.plan?.data?.id);
    const asReader = (path: string) => t.request('GET', `/api/v2${path}`, { token: reader });
    expect((await asReader(`/runs/${run}`)).status).toBe(200);
    expect((await asReader(`/plans/${planId}/json-output`)).status).toBe(404);
    expect((await asReader(`/runs/${run}/plan/json-output`)).status).toBe(404);

    const redacted = await asReader(`/plans/${planId}/json-output-redacted`);
    expect(redacted.status).toBe(200);
    expect(redacted.headers.get('content-type')).toMatch(/application\/json/);
    expect(redacted.text).not.toContain(SECRET);
    expect(redacted.text).not.toContain(DECLARED);
    const doc = redacted.json as {
      variables: Record<string, { value?: unknown }>;
      resource_changes: { change: { after: Record<string, unknown>; after_sensitive: unknown } }[];
      output_changes: Record<string, { after: unknown; after_sensitive: boolean }>;
      planned_values: { outputs: Record<string, { sensitive: boolean; value?: unknown }> };
    };
    expect(doc.variables.password).toEqual({ value: null });
    expect(doc.resource_changes[0]!.change.after).toMatchObject({
      engine: 'postgres',
      password: null,
      note: null,
      api_key: null,
    });
    expect(doc.resource_changes[0]!.change.after_sensitive).toMatchObject({
      password: true,
      note: true,
    });
    expect(doc.output_changes.password).toMatchObject({ after: null, after_sensitive: true });
    expect(doc.output_changes.engine).toMatchObject({ after: 'postgres' });
    expect(doc.planned_values.outputs.password).toEqual({ sensitive: true, value: null });

    const full = await t.request('GET', `/api/v2/plans/${planId}/json-output-redacted`, {
      token: flow.token,
    });
    expect(full.text).toBe(redacted.text);
  });
});
