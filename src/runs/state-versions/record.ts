import { createHash } from 'node:crypto';
import { systemMetadata, type AuditMetadata } from '../../core/events.js';
import type { StateVersionCreated } from '../events.js';
import { API, toOne, type Resource } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import {
  createStateVersion,
  stateVersionDecider,
  type PendingStateVersion,
  type StateVersionRow,
} from './projection.js';
import { stateFacts } from './facts.js';

/** What a pending and a finalized state version show alike. */
const common = (sv: {
  id: string;
  createdAt: string;
  serial: number;
  lineage: string | null;
  md5: string;
  runId: string | null;
  workspaceId: string;
}) => ({
  self: `${API}/state-versions/${sv.id}`,
  attributes: {
    'created-at': sv.createdAt,
    serial: sv.serial,
    lineage: sv.lineage,
    md5: sv.md5,
  },
  relationships: {
    run: toOne('runs', sv.runId),
    workspace: toOne('workspaces', sv.workspaceId),
  },
});

/** A finalized state version. */
export function presentStateVersion(sv: StateVersionRow): Resource {
  const { self, attributes, relationships } = common(sv);
  return {
    id: sv.id,
    type: 'state-versions',
    attributes: {
      ...attributes,
      size: sv.size,
      status: 'finalized',
      'resources-processed': true,
      'terraform-version': sv.engineVersion,
      'hosted-state-download-url': `${self}/download`,
    },
    relationships: { ...relationships, outputs: { links: { related: `${self}/outputs` } } },
    links: { self },
  };
}

/** A state version waiting for its upload, with the two secret upload addresses. */
export function presentPendingStateVersion(
  sv: PendingStateVersion,
  urls: { state: string; json: string },
): Resource {
  const { self, attributes, relationships } = common(sv);
  return {
    id: sv.id,
    type: 'state-versions',
    attributes: {
      ...attributes,
      status: 'pending',
      'resources-processed': false,
      'hosted-state-download-url': null,
      'hosted-state-upload-url': urls.state,
      'hosted-json-state-upload-url': urls.json,
    },
    relationships,
    links: { self },
  };
}

interface StateVersionRecord {
  id?: string;
  workspaceId: string;
  runId: string | null;
  state: string;
  engineVersion?: string | null;
  serial?: number;
  lineage?: string | null;
}

/**
 * Record a new state for a workspace: after an apply (the executor; serial one above the current
 * one, or the document's own when that is higher, lineage kept), or an upload (serial and lineage
 * as the client announced and the checks allowed). The document is stored in the log. The serial
 * is read and the version appended in one command, so two recordings cannot take the same serial.
 */
export function recordStateVersion(
  model: RunsModel,
  input: StateVersionRecord,
  metadata: AuditMetadata = systemMetadata('executor'),
): Promise<StateVersionCreated['data']> {
  return model.core.handler.atomically(() => recordStateVersionSync(model, input, metadata));
}

/** {@link recordStateVersion} inside `core.handler.atomically` only. */
export function recordStateVersionSync(
  model: RunsModel,
  input: StateVersionRecord,
  metadata: AuditMetadata = systemMetadata('executor'),
): StateVersionCreated['data'] {
  const facts = stateFacts(input.state);
  const current = model.states.current(input.workspaceId);
  const next = (current?.serial ?? 0) + 1;
  const data: StateVersionCreated['data'] = {
    id: input.id ?? model.core.ids.id('sv'),
    workspaceId: input.workspaceId,
    runId: input.runId,
    serial: input.serial ?? Math.max(next, facts.serial ?? 0),
    lineage: input.lineage ?? current?.lineage ?? facts.lineage ?? model.core.ids.uuid(),
    md5: createHash('md5').update(input.state).digest('hex'),
    // Sealed like every other secret: a state document holds sensitive values in clear.
    state: model.core.sealer.seal(input.state),
    size: Buffer.byteLength(input.state),
    resources: facts.resources,
    engineVersion: input.engineVersion ?? facts.engineVersion,
  };
  model.core.handler.handleSync(data.id, stateVersionDecider, createStateVersion(data), metadata);
  return data;
}

/** The state document of a recorded state version, from its read model, unsealed. */
export function stateDocument(model: RunsModel, id: string): string | null {
  const document = model.states.document(id);
  return document === null ? null : model.core.sealer.open(document);
}
