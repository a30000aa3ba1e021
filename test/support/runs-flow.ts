import { expect } from 'vitest';
import { configTarball, type Res, type RunsHarness } from './runs-harness.js';

/**
 * Steps of the runs API flow, over HTTP, for tests. The `drive*` helpers stand in for the executor
 * until its drivers exist: they send the same commands the executor sends.
 */

let counter = 0;
const unique = (prefix: string) => `${prefix}-${++counter}`;

export async function createOrg(h: RunsHarness, token = h.adminToken): Promise<string> {
  const name = unique('org');
  const res = await h.api('POST', '/organizations', {
    token,
    body: { data: { type: 'organizations', attributes: { name, email: `${name}@example.com` } } },
  });
  expect(res.status, res.text).toBe(201);
  return name;
}

export async function createWorkspace(
  h: RunsHarness,
  org: string,
  attributes: Record<string, unknown> = {},
  token = h.adminToken,
): Promise<Res> {
  const res = await h.api('POST', `/organizations/${org}/workspaces`, {
    token,
    body: { data: { type: 'workspaces', attributes: { name: unique('ws'), ...attributes } } },
  });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

/** Create a configuration version and upload the fixture tarball to it. */
export async function uploadedCv(
  h: RunsHarness,
  wsId: string,
  attributes: Record<string, unknown> = { 'auto-queue-runs': false },
  token = h.adminToken,
): Promise<string> {
  const created = await h.api('POST', `/workspaces/${wsId}/configuration-versions`, {
    token,
    body: { data: { type: 'configuration-versions', attributes } },
  });
  expect(created.status, created.text).toBe(201);
  const put = await h.api('PUT', String(created.json.data.attributes['upload-url']), {
    token: null,
    raw: configTarball(),
  });
  expect(put.status, put.text).toBe(200);
  return created.json.data.id;
}

export const runBody = (
  wsId: string,
  attributes: Record<string, unknown> = {},
  cvId: string | null = null,
) => ({
  data: {
    type: 'runs',
    attributes,
    relationships: {
      workspace: { data: { type: 'workspaces', id: wsId } },
      'configuration-version': {
        data: cvId === null ? null : { type: 'configuration-versions', id: cvId },
      },
    },
  },
});

export async function createRun(
  h: RunsHarness,
  wsId: string,
  attributes: Record<string, unknown> = {},
  token = h.adminToken,
): Promise<Res> {
  const res = await h.api('POST', '/runs', { token, body: runBody(wsId, attributes) });
  expect(res.status, res.text).toBe(201);
  return res.json.data;
}

export async function getRun(h: RunsHarness, id: string, token = h.adminToken): Promise<Res> {
  const res = await h.api('GET', `/runs/${id}`, { token });
  expect(res.status, res.text).toBe(200);
  return res.json.data;
}

export async function status(h: RunsHarness, id: string): Promise<string> {
  return (await getRun(h, id)).attributes.status;
}

/** A workspace with an uploaded configuration, ready for runs. */
export async function readyWorkspace(
  h: RunsHarness,
  attributes: Record<string, unknown> = {},
): Promise<{ org: string; ws: string }> {
  const org = await createOrg(h);
  const ws = (await createWorkspace(h, org, attributes)).id;
  await uploadedCv(h, ws);
  return { org, ws };
}

/** The executor's plan: started, then finished (with the plan stage completed). */
export async function drivePlan(h: RunsHarness, runId: string, hasChanges = true): Promise<void> {
  await h.runs.executor.planStarted(runId);
  await h.runs.executor.planFinished(runId, {
    hasChanges,
    counts: { additions: hasChanges ? 1 : 0, changes: 0, destructions: 0, imports: 0 },
    log: 'Plan: 1 to add, 0 to change, 0 to destroy.\n',
    jsonOutput: { format_version: '1.2', resource_changes: [] },
  });
  await h.settle();
}

/** The executor's apply: started, then finished. */
export async function driveApply(h: RunsHarness, runId: string): Promise<void> {
  await h.runs.executor.applyStarted(runId);
  await h.runs.executor.applyFinished(runId, {
    counts: { additions: 1, changes: 0, destructions: 0, imports: 0 },
    log: 'Apply complete! Resources: 1 added.\n',
  });
  await h.settle();
}
