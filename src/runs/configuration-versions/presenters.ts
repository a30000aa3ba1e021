import { API, toOne, type Resource } from '../jsonapi.js';
import type { ConfigurationVersionRow } from './projection.js';

/** The configuration version resource; `uploadUrl` is given only in the create response. */
export function presentConfigurationVersion(
  cv: ConfigurationVersionRow,
  uploadUrl?: string,
): Resource {
  const self = `${API}/configuration-versions/${cv.id}`;
  return {
    id: cv.id,
    type: 'configuration-versions',
    attributes: {
      'auto-queue-runs': cv.autoQueueRuns,
      error: cv.status === 'errored' ? 'invalid_archive' : null,
      'error-message': cv.errorMessage,
      provisional: cv.provisional,
      source: cv.source,
      speculative: cv.speculative,
      status: cv.status,
      'status-timestamps': cv.statusTimestamps,
      'created-at': cv.createdAt,
      size: cv.size,
      ...(uploadUrl === undefined ? {} : { 'upload-url': uploadUrl }),
    },
    relationships: {
      workspace: toOne('workspaces', cv.workspaceId),
      'ingress-attributes': { data: null },
    },
    links: { self, download: `${self}/download` },
  };
}
