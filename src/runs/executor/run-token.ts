import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Core } from '../../context.js';
import { parseJson } from '../../core/json.js';
import { ForbiddenError, KeelError, NotFoundError } from '../../core/errors.js';
import { send } from '../jsonapi.js';
import { NO_ACCESS, type WorkspaceAccess } from '../lifecycle.js';
import { presentEntitlements } from '../organizations/presenters.js';
import type { RunsModel } from '../model.js';
import { outputId, outputsOf, parseOutputId, presentOutput } from '../state-versions/outputs.js';
import { presentStateVersion, stateDocument } from '../state-versions/record.js';
import { presentWorkspace } from '../workspaces/presenters.js';
import type { WorkspaceRow } from '../workspaces/projection.js';
import type { Phase } from './service.js';

/**
 * The token a run's plan or apply is given for Keel itself, as HCP Terraform gives each run its
 * `ATLAS_TOKEN`: it names the run and the phase, carries an upper bound on its life, and is signed
 * with the keyring's MAC key, so every process serving the data directory can check it. It is
 * valid only while the run is still in that phase (`planning` or `applying`): it ends with the
 * phase, whichever way the phase ends.
 */
export interface RunTokenClaims {
  run: string;
  phase: Phase;
  /** Milliseconds since the epoch after which the token is refused, phase or not. */
  exp: number;
}

const runTokenClaims: z.ZodType<RunTokenClaims> = z.object({
  run: z.string(),
  phase: z.enum(['plan', 'apply']),
  exp: z.number(),
});

const PREFIX = 'keel-run.';

/** The MAC input: a fixed label, so no other HMAC Keel computes can be passed off as a token. */
const signed = (payload: string) => `keel run token\0${payload}`;

export function issueRunToken(core: Core, claims: RunTokenClaims): string {
  const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${PREFIX}${payload}.${core.sealer.hmac(signed(payload))}`;
}

/** Whether a bearer token is a run token at all (checked or not). */
export const isRunToken = (token: string): boolean => token.startsWith(PREFIX);

/** The claims of a well-signed run token, or null (expiry and phase are not checked here). */
export function readRunToken(core: Core, token: string): RunTokenClaims | null {
  if (!isRunToken(token)) return null;
  const [payload, mac, ...rest] = token.slice(PREFIX.length).split('.');
  if (payload === undefined || mac === undefined || rest.length > 0) return null;
  if (!core.sealer.matches(signed(payload), mac)) return null;
  const claims = parseJson(runTokenClaims, Buffer.from(payload, 'base64url').toString('utf8'));
  // Not a run token (bad shape or encoding): the caller answers 401.
  return claims.ok ? claims.value : null;
}

/** What a valid run token stands for: the run, and the workspace and organization it runs in. */
export interface RunScope {
  runId: string;
  workspace: WorkspaceRow;
}

/** A run's phase as the run's status shows it while the phase runs. */
const RUNNING: Record<Phase, string> = { plan: 'planning', apply: 'applying' };

/**
 * The scope of a run token that is still valid: well signed, not past its bound, and its run still
 * in the phase it was issued for. Anything else is refused as an invalid token.
 */
export function runScope(core: Core, model: RunsModel, token: string): RunScope {
  const claims = readRunToken(core, token);
  const run = claims === null ? null : model.runs.get(claims.run);
  const workspace = run === null ? null : model.workspaces.get(run.workspaceId);
  if (
    claims === null ||
    run === null ||
    workspace === null ||
    claims.exp <= core.clock.now().getTime() ||
    run.status !== RUNNING[claims.phase]
  )
    throw new KeelError('unauthenticated', 'the token is not valid', { title: 'unauthorized' });
  return { runId: run.id, workspace };
}

/**
 * Whether a run may read a workspace's state (its outputs, and the state `terraform_remote_state`
 * downloads): its own workspace, or one in its organization that shares its state with every
 * workspace of the organization (`global-remote-state`). Keel has no remote-state consumer lists,
 * so a workspace that does not share globally is readable by no other workspace's runs.
 */
export function sharesStateWith(target: WorkspaceRow, scope: RunScope): boolean {
  return (
    target.organization === scope.workspace.organization &&
    (target.id === scope.workspace.id || target.settings.globalRemoteState)
  );
}

/** What a run token is shown of a workspace it may read: reading it and its state, nothing more. */
const RUN_TOKEN_ACCESS: WorkspaceAccess = { ...NO_ACCESS, read: true, stateVersions: 'read' };

/**
 * The only routes a run token opens, all reads: what `terraform_remote_state` and `terraform
 * output`-style reads need (the organization's entitlements, a workspace by name, its current
 * state version, the state's download and its outputs), for workspaces that share their state
 * with the run's (see {@link sharesStateWith}); others are not found. Mounted among the routes
 * that read their own token: a request without a run token falls through to the ordinary routes,
 * where a run token is not a valid token.
 */
export function runTokenRoutes(router: Router, core: Core, model: RunsModel): void {
  /** The scope of the request's run token, or undefined when it has none (fall through). */
  const scopeOf = (ctx: Context): RunScope | undefined => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    if (bearer === undefined || !isRunToken(bearer)) return undefined;
    return runScope(core, model, bearer);
  };
  /**
   * A workspace of the run's organization that shares its state with the run's workspace. One
   * that does not is refused by name with a 403 (not the API's usual 404 for what a token may not
   * see: terraform would take that for a missing workspace and try to create it), so terraform
   * shows why.
   */
  const shared = (scope: RunScope, ws: WorkspaceRow | null, named: string): WorkspaceRow => {
    if (ws === null || ws.organization !== scope.workspace.organization)
      throw new NotFoundError(`workspace ${named} not found`);
    if (!sharesStateWith(ws, scope))
      throw new ForbiddenError(
        `workspace ${ws.organization}/${ws.name} does not share its state with workspace ${scope.workspace.organization}/${scope.workspace.name}: its global-remote-state is false (Keel keeps no remote-state consumer lists)`,
        { status: 403, title: 'forbidden' },
      );
    return ws;
  };
  const readable = (scope: RunScope, id: string): WorkspaceRow =>
    shared(scope, model.workspaces.get(id), id);
  const current = (scope: RunScope, wsId: string) => {
    const ws = readable(scope, wsId);
    const sv = model.states.current(ws.id);
    if (sv === null) throw new NotFoundError(`workspace ${ws.id} has no state version`);
    return sv;
  };
  /** A finalized state version of a workspace the run may read. */
  const version = (scope: RunScope, id: string) => {
    const sv = model.states.get(id);
    if (sv === null) throw new NotFoundError(`state version ${id} not found`);
    readable(scope, sv.workspaceId);
    return sv;
  };
  const outputs = (svId: string, reveal: boolean) =>
    outputsOf(stateDocument(model, svId) ?? '{}').map((o, i) =>
      presentOutput(outputId(svId, i), o, reveal),
    );

  router.get('/organizations/:org/entitlement-set', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    const org = ctx.params.org ?? '';
    if (org !== scope.workspace.organization)
      throw new NotFoundError(`organization ${org} not found`);
    send(ctx, 200, { data: presentEntitlements(org) });
  });
  router.get('/organizations/:org/workspaces/:name', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    const org = ctx.params.org ?? '';
    const name = ctx.params.name ?? '';
    const ws = shared(scope, model.workspaces.byName(org, name), `${org}/${name}`);
    send(ctx, 200, { data: presentWorkspace(ws, RUN_TOKEN_ACCESS, core.config) });
  });
  router.get('/workspaces/:id/current-state-version', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    send(ctx, 200, { data: presentStateVersion(current(scope, ctx.params.id ?? '')) });
  });
  router.get('/workspaces/:id/current-state-version-outputs', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    send(ctx, 200, { data: outputs(current(scope, ctx.params.id ?? '').id, false) });
  });
  router.get('/state-versions/:id/download', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    const sv = version(scope, ctx.params.id ?? '');
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = stateDocument(model, sv.id) ?? '';
  });
  router.get('/state-version-outputs/:id', (ctx) => {
    const scope = scopeOf(ctx);
    if (scope === undefined) return;
    const id = ctx.params.id ?? '';
    const parsed = parseOutputId(id);
    const output =
      parsed === null ? undefined : outputs(version(scope, parsed.svId).id, true)[parsed.index];
    if (output === undefined) throw new NotFoundError(`state version output ${id} not found`);
    send(ctx, 200, { data: output });
  });
}
