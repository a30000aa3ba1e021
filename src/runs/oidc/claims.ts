import type { WorkspaceVariable } from '../executor/types.js';
import type { RunsModel } from '../model.js';
import type { Claims, OidcIssuer } from './keys.js';

/**
 * Workload identity tokens in a phase's environment, as the reference gives them: an environment
 * variable `TFC_WORKLOAD_IDENTITY_AUDIENCE` (or `…_AUDIENCE_<TAG>`) asks for
 * `TFC_WORKLOAD_IDENTITY_TOKEN` (or `…_TOKEN_<TAG>`), a token for that audience naming the run and
 * its phase, valid for the phase's longest duration.
 */

const AUDIENCE = /^TFC_WORKLOAD_IDENTITY_AUDIENCE(_[A-Za-z0-9_]+)?$/;
/** How long a token is good for: the phase timeout, two hours. */
export const TOKEN_TTL_SECONDS = 2 * 60 * 60;

export async function identityTokens(
  model: RunsModel,
  issuer: OidcIssuer,
  variables: readonly WorkspaceVariable[],
  run: { runId: string; phase: 'plan' | 'apply' },
): Promise<WorkspaceVariable[]> {
  const asks = variables.filter((v) => v.category === 'env' && AUDIENCE.test(v.key));
  if (asks.length === 0) return [];
  const row = model.runs.get(run.runId);
  const ws = row === null ? null : model.workspaces.get(row.workspaceId);
  if (row === null || ws === null) return [];
  const project = model.projects.get(ws.projectId);
  const projectName = project?.name ?? '';
  const full = `organization:${ws.organization}:project:${projectName}:workspace:${ws.name}`;
  const now = Math.floor(model.core.clock.now().getTime() / 1000);
  return Promise.all(
    asks.map(async (ask) => {
      const tag = AUDIENCE.exec(ask.key)?.[1] ?? '';
      const claims: Claims = {
        iss: issuer.issuer,
        aud: ask.value,
        sub: `${full}:run_phase:${run.phase}`,
        iat: now,
        nbf: now,
        exp: now + TOKEN_TTL_SECONDS,
        jti: model.core.ids.uuid(),
        terraform_organization_name: ws.organization,
        terraform_project_id: ws.projectId,
        terraform_project_name: projectName,
        terraform_workspace_id: ws.id,
        terraform_workspace_name: ws.name,
        terraform_full_workspace: full,
        terraform_run_id: row.id,
        terraform_run_phase: run.phase,
      };
      return {
        key: `TFC_WORKLOAD_IDENTITY_TOKEN${tag}`,
        value: await issuer.sign(claims),
        category: 'env' as const,
        hcl: false,
        // Kept out of logs as any sensitive value is.
        sensitive: true,
      };
    }),
  );
}
