import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialTransition, transition } from 'xstate';
import {
  configurationVersionMachine,
  type ConfigurationVersionMachineEvent,
} from '../../../machines/configuration-version.machine.js';
import { tarball } from '../../support/configuration.js';
import { edgesToCover, uncovered } from '../../support/graph-edges.js';
import { configTarball, startRunsHarness, type RunsHarness } from '../../support/runs-harness.js';
import { createOrg, createWorkspace, uploadedCv } from '../../support/runs-flow.js';

/**
 * Model-based tests: every transition of the configuration-version machine, taken through the
 * HTTP API (create, the upload address, archive), comparing the version as `GET` shows it with what
 * the API docs say each status looks like (the tables below), after each step.
 * Mutation check: `pending` ConfigurationVersionUploaded → `errored` fails pending|…Uploaded ("the machine after ConfigurationVersionUploaded: expected 'errored' to be 'uploaded'").
 */

type CvEvent = ConfigurationVersionMachineEvent;
const EVENTS: CvEvent[] = (
  [
    'ConfigurationVersionCreated',
    'ConfigurationVersionUploaded',
    'ConfigurationVersionErrored',
    'ConfigurationVersionArchived',
  ] as const
).map((type) => ({ type, data: {} }));

const EDGES = edgesToCover(configurationVersionMachine, EVENTS, (s) => JSON.stringify(s.value));

/** The status each API step leads to (docs/api/runs.md, configuration versions). */
const AFTER: Record<CvEvent['type'], string> = {
  ConfigurationVersionCreated: 'pending',
  ConfigurationVersionUploaded: 'uploaded',
  ConfigurationVersionErrored: 'errored',
  ConfigurationVersionArchived: 'archived',
};

interface Shown {
  status: string;
  error: string | null;
  timestamps: string[];
  /** `GET …/download`: the archive once uploaded, 404 before. */
  download: number;
}

/** What `GET /configuration-versions/:id` and its download show in each status. */
const SHOWN: Record<string, Shown> = {
  pending: { status: 'pending', error: null, timestamps: [], download: 404 },
  uploaded: { status: 'uploaded', error: null, timestamps: ['uploaded-at'], download: 200 },
  errored: {
    status: 'errored',
    error: 'invalid_archive',
    timestamps: ['errored-at'],
    download: 404,
  },
  archived: {
    status: 'archived',
    error: null,
    timestamps: ['archived-at', 'uploaded-at'],
    download: 200,
  },
};

let h: RunsHarness;
beforeAll(async () => {
  h = await startRunsHarness();
});
afterAll(async () => h.close());

let org: string | undefined;
/** A new version's workspace: one per path, so the "latest version" rule sees only that path. */
async function workspace(): Promise<string> {
  org ??= await createOrg(h);
  return (await createWorkspace(h, org)).id;
}

interface Cv {
  ws: string;
  id: string;
  uploadUrl: string;
}

/** Drives one machine event through the API. */
async function perform(cv: Cv, event: CvEvent): Promise<void> {
  switch (event.type) {
    case 'ConfigurationVersionCreated': {
      const res = await h.api('POST', `/workspaces/${cv.ws}/configuration-versions`, {
        body: {
          data: { type: 'configuration-versions', attributes: { 'auto-queue-runs': false } },
        },
      });
      expect(res.status, res.text).toBe(201);
      cv.id = res.json.data.id;
      cv.uploadUrl = String(res.json.data.attributes['upload-url']);
      return;
    }
    case 'ConfigurationVersionUploaded': {
      const res = await h.api('PUT', cv.uploadUrl, { token: null, raw: configTarball() });
      expect(res.status, res.text).toBe(200);
      return;
    }
    case 'ConfigurationVersionErrored': {
      const evil = tarball({ 'main.tf': '' }, { prefix: '../' });
      const res = await h.api('PUT', cv.uploadUrl, { token: null, raw: evil });
      expect(res.status, res.text).toBe(422);
      return;
    }
    case 'ConfigurationVersionArchived': {
      // only a version that is neither current nor the latest may be archived: upload a newer one
      await uploadedCv(h, cv.ws);
      const res = await h.api('POST', `/configuration-versions/${cv.id}/actions/archive`);
      expect(res.status, res.text).toBe(202);
      return;
    }
    default: {
      const _never: never = event;
      return _never;
    }
  }
}

async function shown(id: string): Promise<Shown> {
  const res = await h.api('GET', `/configuration-versions/${id}`);
  expect(res.status, res.text).toBe(200);
  const a = res.json.data.attributes;
  return {
    status: a.status,
    error: a.error as string | null,
    timestamps: Object.keys(a['status-timestamps']).sort(),
    download: (await h.api('GET', `/configuration-versions/${id}/download`)).status,
  };
}

describe('configuration-version machine, every transition through the API', () => {
  it('has a path for every transition the machine defines', () => {
    expect(uncovered(configurationVersionMachine, EDGES)).toEqual([]);
    expect(EDGES.length).toBeGreaterThanOrEqual(4);
  });

  it.each(EDGES.map((e) => [e.key, e] as const))('%s', async (_key, edge) => {
    const cv: Cv = { ws: await workspace(), id: '', uploadUrl: '' };
    let model = initialTransition(configurationVersionMachine)[0];
    for (const event of edge.steps) {
      expect(model.can(event), `${event.type} in ${String(model.value)}`).toBe(true);
      await perform(cv, event);
      model = transition(configurationVersionMachine, model, event)[0];
      const want = AFTER[event.type];
      expect(model.value, `the machine after ${event.type}`).toBe(want);
      expect(await shown(cv.id), `after ${event.type}`).toEqual(SHOWN[want]);
    }
  });

  it('refuses an upload in every status past pending, changing nothing', async () => {
    for (const edge of EDGES.filter((e) => !e.key.endsWith('|pending'))) {
      const cv: Cv = { ws: await workspace(), id: '', uploadUrl: '' };
      let model = initialTransition(configurationVersionMachine)[0];
      for (const event of edge.steps) {
        await perform(cv, event);
        model = transition(configurationVersionMachine, model, event)[0];
      }
      const before = await shown(cv.id);
      const upload = await h.api('PUT', cv.uploadUrl, { token: null, raw: configTarball() });
      expect(model.can({ type: 'ConfigurationVersionUploaded', data: {} })).toBe(false);
      expect(upload.status, `${edge.key}: ${upload.text}`).toBe(409);
      expect(await shown(cv.id)).toEqual(before);
    }
  });
});
