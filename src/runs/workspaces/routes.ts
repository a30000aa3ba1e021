import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { enginesOf } from '../../config.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { ExecutionMode, WorkspaceSettings } from '../events.js';
import { listFilter, pageOf, paginate, queryValue, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { defaultProjectId } from '../projects/default.js';
import { validate } from '../run/schema.js';
import {
  createWorkspace,
  deleteWorkspace,
  forceUnlockWorkspace,
  lockWorkspace,
  unlockWorkspace,
  updateWorkspace,
  workspaceDecider,
  type LockHolder,
} from './decider.js';
import { executionEngineOf, presentWorkspace } from './presenters.js';
import type { WorkspaceRow } from './projection.js';
import { bindingsDocument, bindingsOf, tagNames, tagsDocument } from './tags.js';

/** `{ [key]: value }` when the value is given, else nothing. */
const optional = <K extends string, V>(key: K, value: V | undefined) =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, V>>;

const NAME = /^[A-Za-z0-9_-]{1,90}$/;

/** `latest`, a version, or a version constraint (`~> 1.11`, `>= 1.5, < 2`). */
const TERRAFORM_VERSION =
  /^(latest|[~<>=!]*\s*v?\d+(\.\d+){0,2}([-+][0-9A-Za-z.-]+)?(\s*,\s*[~<>=!]*\s*v?\d+(\.\d+){0,2}([-+][0-9A-Za-z.-]+)?)*)$/;

const settings = {
  'auto-apply': z.boolean().optional(),
  'auto-apply-run-trigger': z.boolean().optional(),
  description: z.string().nullable().optional(),
  'execution-engine': z.string().optional(),
  'terraform-version': z
    .string()
    .regex(TERRAFORM_VERSION, 'latest, a version or a version constraint')
    .optional(),
  'execution-mode': z.enum(['remote', 'local', 'agent']).optional(),
  /** Deprecated in the reference: `true` is `execution-mode: remote`, `false` is `local`. */
  operations: z.boolean().optional(),
  'allow-destroy-plan': z.boolean().optional(),
  'global-remote-state': z.boolean().optional(),
  'speculative-enabled': z.boolean().optional(),
  'queue-all-runs': z.boolean().optional(),
  'file-triggers-enabled': z.boolean().optional(),
  'trigger-prefixes': z.array(z.string()).optional(),
  'trigger-patterns': z.array(z.string()).optional(),
  'structured-run-output-enabled': z.boolean().optional(),
  'source-name': z.string().nullable().optional(),
  'source-url': z.string().nullable().optional(),
  // Accepted only with the values Keel honours (see `refusedSettings`).
  'working-directory': z.string().nullable().optional(),
  'assessments-enabled': z.boolean().optional(),
  'vcs-repo': z.unknown().optional(),
  'agent-pool-id': z.string().nullable().optional(),
};
type SettingsAttributes = z.infer<z.ZodObject<typeof settings>>;

/**
 * The values Keel cannot honour, refused by name: a working directory (runs plan the archive's
 * root; the terraform CLI would upload the directory above it), health assessments, VCS
 * connections and agent pools, which Keel does not have.
 */
function refuseUnhonoured(a: SettingsAttributes): void {
  const refuse = (name: string, why: string) => {
    throw new ValidationError(`/data/attributes/${name}: ${why}`, { title: 'invalid attribute' });
  };
  if (a['working-directory'] !== undefined && (a['working-directory'] ?? '') !== '')
    refuse(
      'working-directory',
      'Keel runs the configuration at the root of the uploaded archive; upload the subdirectory itself and leave working-directory empty',
    );
  if (a['assessments-enabled'] === true)
    refuse('assessments-enabled', 'Keel runs no health assessments');
  if (a['vcs-repo'] !== undefined && a['vcs-repo'] !== null)
    refuse('vcs-repo', 'Keel has no VCS connections; upload configuration versions instead');
  if (a['agent-pool-id'] !== undefined && a['agent-pool-id'] !== null)
    refuse('agent-pool-id', 'Keel has no agents');
  if (a.operations !== undefined && a['execution-mode'] !== undefined)
    refuse('operations', 'operations is deprecated and cannot be given with execution-mode');
}

/** The stored settings a request gives (absent ones are left out). */
function settingsOf(a: SettingsAttributes): Partial<WorkspaceSettings> {
  refuseUnhonoured(a);
  return {
    ...optional('allowDestroyPlan', a['allow-destroy-plan']),
    ...optional('globalRemoteState', a['global-remote-state']),
    ...optional('speculativeEnabled', a['speculative-enabled']),
    ...optional('queueAllRuns', a['queue-all-runs']),
    ...optional('fileTriggersEnabled', a['file-triggers-enabled']),
    ...optional('triggerPrefixes', a['trigger-prefixes']),
    ...optional('triggerPatterns', a['trigger-patterns']),
    ...optional('structuredRunOutputEnabled', a['structured-run-output-enabled']),
    ...optional('sourceName', a['source-name']),
    ...optional('sourceUrl', a['source-url']),
  };
}

/** `execution-mode`, or the deprecated `operations` flag for it. */
const modeOf = (a: SettingsAttributes): 'remote' | 'local' | 'agent' | undefined =>
  a['execution-mode'] ??
  (a.operations === undefined ? undefined : a.operations ? 'remote' : 'local');

/** `settings` when any is given, else nothing (an event without them changes none). */
const withSettings = (given: Partial<WorkspaceSettings>) =>
  Object.keys(given).length === 0 ? {} : { settings: given };

/** `relationships.project`: the project a workspace is made in or moved to. */
const projectRelationship = z.object({
  data: z.object({ type: z.literal('projects').optional(), id: z.string().min(1) }),
});

const createBody = z.object({
  data: z.object({
    type: z.literal('workspaces').optional(),
    attributes: z
      .object({
        name: z.string().regex(NAME, 'letters, digits, - and _ only (at most 90)'),
        ...settings,
      })
      // An attribute Keel does not store is refused by name, never accepted and lost.
      .strict(),
    relationships: z
      .object({
        tags: tagsDocument.optional(),
        'tag-bindings': bindingsDocument.optional(),
        project: projectRelationship.optional(),
      })
      .optional(),
  }),
});

const updateBody = z.object({
  data: z.object({
    type: z.literal('workspaces').optional(),
    attributes: z
      .object({
        name: z.string().regex(NAME, 'letters, digits, - and _ only (at most 90)').optional(),
        ...settings,
      })
      .strict(),
    relationships: z.object({ project: projectRelationship.optional() }).optional(),
  }),
});

/**
 * `filter[tagged][N][key]=…&filter[tagged][N][value]=…` (go-tfe's tag-binding filter, which the
 * CLI sends for `workspaces { tags = { key = "value" } }`): each N a binding to carry.
 */
function taggedFilter(query: Record<string, unknown>): { key: string; value: string | null }[] {
  const byIndex = new Map<string, { key?: string; value?: string }>();
  for (const [name, raw] of Object.entries(query)) {
    const m = /^filter\[tagged\]\[(\d+)\]\[(key|value)\]$/.exec(name);
    const value = Array.isArray(raw) ? (raw[0] as unknown) : raw;
    if (m === null || typeof value !== 'string') continue;
    const entry = byIndex.get(m[1]!) ?? {};
    entry[m[2] as 'key' | 'value'] = value;
    byIndex.set(m[1]!, entry);
  }
  return [...byIndex.entries()].map(([index, b]) => {
    if (b.key === undefined || b.key === '')
      throw new ValidationError(`filter[tagged][${index}][key] is required`);
    return { key: b.key, value: b.value ?? null };
  });
}

/** Keel runs operations itself or leaves them to the client; it has no agents. */
function executionMode(mode: 'remote' | 'local' | 'agent' | undefined): ExecutionMode | undefined {
  if (mode === 'agent')
    throw new ValidationError(
      '/data/attributes/execution-mode: agent execution is not available; Keel has no agents (use remote or local)',
    );
  return mode;
}

const lockBody = z.object({ reason: z.string().optional() }).optional();

/** Workspace routes: CRUD by id and by organization/name, and the lock actions. */
export function workspaceRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;

  const byName = (ctx: Context, org: string, name: string) => {
    model.organization(ctx, org);
    const ws = model.workspaces.byName(org, name);
    if (ws === null) throw new NotFoundError(`workspace ${org}/${name} not found`);
    return model.workspace(ctx, ws.id);
  };
  const holderOf = (ctx: Context): LockHolder => {
    const p = model.userOrTeam(ctx, 'locking a workspace');
    return { kind: p.kind === 'team' ? 'team' : 'user', id: p.id };
  };
  /** Only `builtin` and the engines the operator configured can be named. */
  const engine = (name: string | undefined): string | undefined => {
    if (name === undefined) return undefined;
    const known = ['builtin', ...Object.keys(enginesOf(model.core.config))];
    if (!known.includes(name))
      throw new ValidationError(
        `/data/attributes/execution-engine: unknown engine ${JSON.stringify(name)}; one of ${known.join(', ')}`,
      );
    return name;
  };
  /** A project of the organization, by id; another organization's is not found. */
  const projectOf = (organization: string, id: string): string => {
    const p = model.projects.get(id);
    if (p === null || p.organization !== organization)
      throw new NotFoundError(`project ${id} not found in ${organization}`);
    return p.id;
  };
  const show = (ctx: Context, ws: WorkspaceRow, status = 200) => {
    const fresh = model.workspaces.get(ws.id) ?? ws;
    send(ctx, status, {
      data: presentWorkspace(
        fresh,
        model.orgs.accessTo(model.principal(ctx), fresh),
        model.core.config,
      ),
    });
  };

  router.post('/organizations/:org/workspaces', async (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    need(model.orgs.owns(model.principal(ctx), org.name), `creating workspaces in ${org.name}`);
    const body = validate(createBody, ctx.request.body).data;
    const a = body.attributes;
    const unique = () => {
      if (model.workspaces.byName(org.name, a.name) !== null)
        throw new ConflictError(`workspace ${org.name}/${a.name} already exists`, {
          status: 422,
          title: 'invalid attribute',
        });
    };
    unique();
    const data = {
      id: model.core.ids.id('ws'),
      organization: org.name,
      name: a.name,
      autoApply: a['auto-apply'] ?? false,
      description: a.description ?? null,
      ...(a['execution-engine'] === undefined
        ? {}
        : { executionEngine: engine(a['execution-engine']) }),
      ...optional('terraformVersion', a['terraform-version']),
      ...optional('executionMode', executionMode(modeOf(a))),
      ...optional('autoApplyRunTrigger', a['auto-apply-run-trigger']),
      ...withSettings(settingsOf(a)),
      ...optional('tags', tagNames(body.relationships?.tags, org.name)),
      ...optional(
        'tagBindings',
        body.relationships?.['tag-bindings'] === undefined
          ? undefined
          : bindingsOf(body.relationships['tag-bindings']),
      ),
      projectId:
        body.relationships?.project === undefined
          ? defaultProjectId(org.name)
          : projectOf(org.name, body.relationships.project.data.id),
    };
    // The name is checked again where the command is decided: another request may have taken it.
    await handler.handle(
      data.id,
      workspaceDecider,
      (state) => {
        unique();
        return createWorkspace(data)(state);
      },
      model.metadata(ctx),
    );
    show(ctx, model.workspaces.get(data.id)!, 201);
  });

  router.get('/organizations/:org/workspaces', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const page = pageOf(ctx);
    const search = queryValue(ctx, 'search[name]') ?? null;
    const { rows, total } = model.workspaces.list(
      org.name,
      search,
      page.size,
      (page.number - 1) * page.size,
      listFilter(ctx, 'search[tags]') ?? [],
      taggedFilter(ctx.query),
      queryValue(ctx, 'filter[project][id]') ?? null,
    );
    const principal = model.principal(ctx);
    const visible = rows.filter((ws) => model.orgs.accessTo(principal, ws).read);
    send(ctx, 200, {
      data: visible.map((ws) =>
        presentWorkspace(ws, model.orgs.accessTo(principal, ws), model.core.config),
      ),
      ...paginate(ctx, page, { total }),
    });
  });

  router.get('/organizations/:org/workspaces/:name', (ctx) =>
    show(ctx, byName(ctx, ctx.params.org!, ctx.params.name!).ws),
  );
  router.get('/workspaces/:id', (ctx) => show(ctx, model.workspace(ctx, ctx.params.id!).ws));

  const update = async (ctx: Context, ws: WorkspaceRow, admin: boolean) => {
    need(admin, `updating workspace ${ws.id}`);
    const body = validate(updateBody, ctx.request.body).data;
    const a = body.attributes;
    const moveTo = body.relationships?.project?.data.id;
    if (moveTo !== undefined)
      need(
        model.orgs.owns(model.principal(ctx), ws.organization),
        `moving workspace ${ws.id} to project ${moveTo}`,
      );
    const unique = () => {
      if (
        a.name !== undefined &&
        a.name !== ws.name &&
        model.workspaces.byName(ws.organization, a.name) !== null
      ) {
        throw new ConflictError(`workspace ${ws.organization}/${a.name} already exists`, {
          status: 422,
          title: 'invalid attribute',
        });
      }
    };
    unique();
    // A run's plan artifact is only understood by the driver that made it.
    if (
      a['execution-engine'] !== undefined &&
      a['execution-engine'] !== executionEngineOf(ws, model.core.config) &&
      ws.lock?.kind === 'run'
    )
      throw new ConflictError(
        `workspace ${ws.id} has run ${ws.lock.id} in progress; change its execution engine after it completes`,
        { title: 'conflict' },
      );
    const changes = {
      ...(a['auto-apply'] === undefined ? {} : { autoApply: a['auto-apply'] }),
      ...(a.name === undefined ? {} : { name: a.name }),
      ...(a.description === undefined ? {} : { description: a.description }),
      ...(a['execution-engine'] === undefined
        ? {}
        : { executionEngine: engine(a['execution-engine']) }),
      ...optional('terraformVersion', a['terraform-version']),
      ...optional('executionMode', executionMode(modeOf(a))),
      ...optional('autoApplyRunTrigger', a['auto-apply-run-trigger']),
      ...withSettings(settingsOf(a)),
      ...(moveTo === undefined || moveTo === ws.projectId
        ? {}
        : { projectId: projectOf(ws.organization, moveTo) }),
    };
    await handler.handle(
      ws.id,
      workspaceDecider,
      (state) => {
        unique();
        return updateWorkspace(ws.id, changes)(state);
      },
      model.metadata(ctx),
    );
    show(ctx, ws);
  };
  router.patch('/workspaces/:id', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    await update(ctx, ws, access.admin);
  });
  router.patch('/organizations/:org/workspaces/:name', async (ctx) => {
    const { ws, access } = byName(ctx, ctx.params.org!, ctx.params.name!);
    await update(ctx, ws, access.admin);
  });

  const remove = async (ctx: Context, ws: WorkspaceRow, admin: boolean) => {
    need(admin, `deleting workspace ${ws.id}`);
    await handler.handle(ws.id, workspaceDecider, deleteWorkspace(ws.id), model.metadata(ctx));
    ctx.status = 204;
  };
  router.delete('/workspaces/:id', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    await remove(ctx, ws, access.admin);
  });
  router.delete('/organizations/:org/workspaces/:name', async (ctx) => {
    const { ws, access } = byName(ctx, ctx.params.org!, ctx.params.name!);
    await remove(ctx, ws, access.admin);
  });

  router.post('/workspaces/:id/actions/lock', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.lock, `locking workspace ${ws.id}`);
    const reason = validate(lockBody, ctx.request.body)?.reason ?? null;
    await handler.handle(
      ws.id,
      workspaceDecider,
      lockWorkspace(ws.id, holderOf(ctx), reason),
      model.metadata(ctx),
    );
    show(ctx, ws);
  });
  router.post('/workspaces/:id/actions/unlock', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.lock, `unlocking workspace ${ws.id}`);
    await handler.handle(
      ws.id,
      workspaceDecider,
      unlockWorkspace(ws.id, holderOf(ctx)),
      model.metadata(ctx),
    );
    show(ctx, ws);
  });
  router.post('/workspaces/:id/actions/force-unlock', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.admin, `force-unlocking workspace ${ws.id}`);
    await handler.handle(
      ws.id,
      workspaceDecider,
      forceUnlockWorkspace(ws.id, holderOf(ctx)),
      model.metadata(ctx),
    );
    show(ctx, ws);
  });
}
