import type { Config } from '../../config.js';
import { API, toOne, type Resource } from '../jsonapi.js';
import type { WorkspaceAccess } from '../lifecycle.js';
import type { WorkspaceRow } from './projection.js';

/** The engine a workspace's runs use: its own choice, else `default` when configured, else `builtin`. */
export function executionEngineOf(ws: WorkspaceRow, config: Config): string {
  return ws.executionEngine ?? (config.engineBin === null ? 'builtin' : 'default');
}

/** A tag's id: stable for its organization and name. */
export const tagId = (organization: string, name: string): string =>
  `tag-${Buffer.from(`${organization}/${name}`).toString('base64url')}`;

const LOCK_TYPE = { user: 'users', team: 'teams', run: 'runs' } as const;

/** The workspace resource. */
export function presentWorkspace(
  ws: WorkspaceRow,
  access: WorkspaceAccess,
  config: Config,
): Resource {
  const self = `${API}/workspaces/${ws.id}`;
  return {
    id: ws.id,
    type: 'workspaces',
    attributes: {
      name: ws.name,
      description: ws.description,
      'auto-apply': ws.autoApply,
      'auto-apply-run-trigger': ws.autoApplyRunTrigger,
      'created-at': ws.createdAt,
      'updated-at': ws.updatedAt,
      locked: ws.lock !== null,
      'locked-reason': ws.lockReason ?? '',
      'execution-mode': ws.executionMode,
      operations: ws.executionMode === 'remote',
      'terraform-version': ws.terraformVersion,
      'tag-names': ws.tags,
      'execution-engine': executionEngineOf(ws, config),
      'allow-destroy-plan': ws.settings.allowDestroyPlan,
      'global-remote-state': ws.settings.globalRemoteState,
      'speculative-enabled': ws.settings.speculativeEnabled,
      'queue-all-runs': ws.settings.queueAllRuns,
      'file-triggers-enabled': ws.settings.fileTriggersEnabled,
      'trigger-prefixes': ws.settings.triggerPrefixes,
      'trigger-patterns': ws.settings.triggerPatterns,
      'structured-run-output-enabled': ws.settings.structuredRunOutputEnabled,
      'source-name': ws.settings.sourceName,
      'source-url': ws.settings.sourceUrl,
      'working-directory': ws.settings.workingDirectory,
      // Keel runs no health assessments; turning them on is refused.
      'assessments-enabled': false,
      'vcs-repo': null,
      environment: 'default',
      actions: { 'is-destroyable': ws.lock === null },
      permissions: {
        'can-update': access.admin,
        'can-destroy': access.admin,
        'can-queue-run': access.queuePlans,
        'can-queue-apply': access.applyRuns,
        'can-queue-destroy': access.applyRuns,
        'can-lock': access.lock,
        'can-unlock': access.lock,
        'can-force-unlock': access.admin,
        'can-read-settings': access.read,
        'can-read-variable': access.variables !== 'none',
        'can-update-variable': access.variables === 'write',
        'can-read-state-versions':
          access.stateVersions === 'read' || access.stateVersions === 'write',
        'can-read-state-outputs': access.stateVersions !== 'none',
        'can-create-state-versions': access.stateVersions === 'write',
        'can-manage-run-tasks': access.runTasks,
      },
    },
    relationships: {
      organization: toOne('organizations', ws.organization),
      project: toOne('projects', ws.projectId),
      'current-run': toOne('runs', ws.currentRunId),
      'latest-run': toOne('runs', ws.latestRunId),
      'locked-by': ws.lock === null ? { data: null } : toOne(LOCK_TYPE[ws.lock.kind], ws.lock.id),
      'current-configuration-version': toOne(
        'configuration-versions',
        ws.currentConfigurationVersionId,
      ),
      'current-state-version': toOne('state-versions', ws.currentStateVersionId),
      tags: { data: ws.tags.map((name) => ({ type: 'tags', id: tagId(ws.organization, name) })) },
      'tag-bindings': { links: { related: `${self}/tag-bindings` } },
    },
    links: { self },
  };
}
