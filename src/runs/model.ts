import type { Context } from 'koa';
import type { Core } from '../context.js';
import { KeelError, NotFoundError } from '../core/errors.js';
import type { AuditMetadata } from '../core/events.js';
import type { RunsPrincipal } from '../http/types.js';
import { identityQueries, type IdentityQueries } from './identity/projection.js';
import { ConfigurationVersionQueries } from './configuration-versions/projection.js';
import { OrganizationQueries } from './organizations/projection.js';
import { ProjectQueries } from './projects/projection.js';
import { VarsetQueries } from './varsets/projection.js';
import { RunHistoryQueries } from './run/history.js';
import { RunQueries } from './run/queries.js';
import { StateVersionQueries } from './state-versions/projection.js';
import type { RunRow } from './run/projection.js';
import { WorkspaceQueries, type WorkspaceRow } from './workspaces/projection.js';
import { NO_ACCESS, type WorkspaceAccess } from './lifecycle.js';
import type { Requester } from './events.js';
import { requestMetadata } from '../http/request-id.js';

/**
 * What every runs route and reactor works with: the core, the read models' queries, and the
 * access rules (unauthorized is reported as not found).
 */
export class RunsModel {
  readonly runs: RunQueries;
  readonly workspaces: WorkspaceQueries;
  readonly cvs: ConfigurationVersionQueries;
  readonly orgs: OrganizationQueries;
  readonly identity: IdentityQueries;
  /** Each run's events and comments, as their lists show them. */
  readonly history: RunHistoryQueries;
  readonly states: StateVersionQueries;
  readonly projects: ProjectQueries;
  readonly varsets: VarsetQueries;

  constructor(readonly core: Core) {
    this.runs = new RunQueries(core.db, core.sealer);
    this.workspaces = new WorkspaceQueries(core.db);
    this.cvs = new ConfigurationVersionQueries(core.db);
    this.orgs = new OrganizationQueries(core.db);
    this.identity = identityQueries(core.db);
    this.history = new RunHistoryQueries(core.db);
    this.states = new StateVersionQueries(core.db);
    this.projects = new ProjectQueries(core.db);
    this.varsets = new VarsetQueries(core.db);
  }

  /** The caller of an `/api/v2` route (the kernel has authenticated it). */
  principal(ctx: Context): RunsPrincipal {
    const p = ctx.state.principal;
    if (p === undefined)
      throw new KeelError('unauthenticated', 'a token is required', { title: 'unauthorized' });
    return p;
  }

  /** Audit metadata for a request. */
  metadata(ctx: Context): AuditMetadata {
    const p = this.principal(ctx);
    return requestMetadata(ctx, { accessor: p.tokenId, name: p.name });
  }

  /** Refuse organization tokens where the spec wants a user or team token (reported as not found). */
  userOrTeam(ctx: Context, what: string): RunsPrincipal {
    const p = this.principal(ctx);
    if (p.kind === 'organization')
      throw new NotFoundError(
        `${what} needs a user or team token; organization tokens are refused`,
      );
    return p;
  }

  /** A workspace the caller can read, with the caller's access; otherwise not found. */
  workspace(ctx: Context, id: string): { ws: WorkspaceRow; access: WorkspaceAccess } {
    const ws = this.workspaces.get(id);
    if (ws === null) throw new NotFoundError(`workspace ${id} not found`);
    const access = this.orgs.accessTo(this.principal(ctx), ws);
    if (!access.read) throw new NotFoundError(`workspace ${id} not found`);
    return { ws, access };
  }

  /** A run the caller can read, its workspace and the caller's access; otherwise not found. */
  run(ctx: Context, id: string): { run: RunRow; ws: WorkspaceRow; access: WorkspaceAccess } {
    const run = this.runs.get(id);
    const ws = run === null ? null : this.workspaces.get(run.workspaceId);
    if (run === null || ws === null) throw new NotFoundError(`run ${id} not found`);
    const access = this.orgs.accessTo(this.principal(ctx), ws);
    if (!access.read) throw new NotFoundError(`run ${id} not found`);
    return { run, ws, access };
  }

  /**
   * The access a recorded requester (a configuration version's creator) has to a workspace now,
   * for work done later on its behalf; no requester, or one that is gone, has none.
   */
  accessOf(requester: Requester | null, ws: WorkspaceRow): WorkspaceAccess {
    if (requester === null) return NO_ACCESS;
    const organization =
      requester.kind === 'team'
        ? (this.orgs.team(requester.id)?.organization ?? null)
        : requester.kind === 'organization'
          ? requester.id
          : null;
    const user = requester.kind === 'user' ? this.identity.user(requester.id) : undefined;
    if (requester.kind === 'user' && user === undefined) return NO_ACCESS;
    const principal: RunsPrincipal = {
      ...requester,
      tokenId: '',
      name: '',
      organization,
      admin: user?.admin ?? false,
    };
    return this.orgs.accessTo(principal, ws);
  }

  /** An organization the caller belongs to; otherwise not found. */
  organization(ctx: Context, name: string) {
    const org = this.orgs.organization(name);
    if (org === null || !this.orgs.belongs(this.principal(ctx), name))
      throw new NotFoundError(`organization ${name} not found`);
    return org;
  }

  /** The name a run's `created-by` shows, from the identity read model. */
  userName(id: string): string | null {
    return this.identity.user(id)?.username ?? null;
  }
}

/** Throw the spec's "unauthorized = not found" when a permission is missing. */
export function need(allowed: boolean, what: string): void {
  if (!allowed) throw new NotFoundError(`${what}: not found or not authorized`);
}
