import type { RouterContext } from '@koa/router';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import { checkKey, variableAttributes } from '../executor/variables.js';
import { pageOf, paginate, queryValue, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import type { VarsetEvent, VarsetVariableData } from './events.js';
import { presentVarset, presentVarsetVariable } from './presenters.js';
import type { VarsetRow } from './projection.js';

/**
 * Variable sets (`/organizations/:org/varsets`, `/varsets/:id` and its relationships), owned by
 * their organization. Project-owned sets (the reference's `parent` relationship) are refused.
 */

interface VarsetState {
  exists: boolean;
  global: boolean;
  variables: Map<string, { key: string; category: string; sensitive: boolean }>;
}

const varsetDecider: Decider<VarsetState, VarsetEvent> = {
  initialState: () => ({ exists: false, global: false, variables: new Map() }),
  evolve(s, e) {
    switch (e.type) {
      case 'VarsetCreated':
        return { ...s, exists: true, global: e.data.global };
      case 'VarsetUpdated':
        return { ...s, global: e.data.global ?? s.global };
      case 'VarsetDeleted':
        return { ...s, exists: false };
      case 'VarsetAppliedToWorkspaces':
      case 'VarsetRemovedFromWorkspaces':
      case 'VarsetAppliedToProjects':
      case 'VarsetRemovedFromProjects':
        return s;
      case 'VarsetVariableCreated': {
        const variables = new Map(s.variables);
        variables.set(e.data.id, e.data);
        return { ...s, variables };
      }
      case 'VarsetVariableUpdated': {
        const variables = new Map(s.variables);
        const old = variables.get(e.data.id);
        if (old !== undefined)
          variables.set(e.data.id, {
            key: e.data.key ?? old.key,
            category: e.data.category ?? old.category,
            sensitive: e.data.sensitive ?? old.sensitive,
          });
        return { ...s, variables };
      }
      case 'VarsetVariableDeleted': {
        const variables = new Map(s.variables);
        variables.delete(e.data.id);
        return { ...s, variables };
      }
      default: {
        const _never: never = e;
        return _never;
      }
    }
  },
  describe: (s) => (s.exists ? `${s.variables.size} variable(s)` : 'absent'),
};

const live = (id: string, s: VarsetState) => {
  if (!s.exists) throw new NotFoundError(`variable set ${id} not found`);
};

/** A key a set already holds in that category (another variable than `except`). */
const taken = (s: VarsetState, key: string, category: string, except: string | null) => {
  for (const [id, v] of s.variables)
    if (id !== except && v.key === key && v.category === category)
      throw new ValidationError(`/data/attributes/key: ${key} has already been taken`, {
        title: 'invalid attribute',
      });
};

const refs = (type: string) =>
  z.object({
    data: z.array(z.object({ type: z.literal(type).optional(), id: z.string().min(1) })),
  });

const varCreate = z
  .object({ ...variableAttributes })
  .partial({ value: true, description: true, hcl: true, sensitive: true });
const setAttributes = {
  name: z.string().min(1).max(128),
  description: z.string().max(512).optional(),
  global: z.boolean().optional(),
  priority: z.boolean().optional(),
};
const createBody = z.object({
  data: z.object({
    type: z.literal('varsets').optional(),
    attributes: z.object(setAttributes).strict(),
    relationships: z
      .object({
        workspaces: refs('workspaces').optional(),
        projects: refs('projects').optional(),
        vars: z
          .object({
            data: z.array(z.object({ type: z.literal('vars').optional(), attributes: varCreate })),
          })
          .optional(),
      })
      .strict()
      .optional(),
  }),
});
const updateBody = z.object({
  data: z.object({
    type: z.literal('varsets').optional(),
    attributes: z.object({ ...setAttributes, name: setAttributes.name.optional() }).strict(),
    relationships: z
      .object({ workspaces: refs('workspaces').optional(), projects: refs('projects').optional() })
      .strict()
      .optional(),
  }),
});
const varCreateBody = z.object({
  data: z.object({ type: z.literal('vars').optional(), attributes: varCreate }),
});
const varUpdateBody = z.object({
  data: z.object({
    type: z.literal('vars').optional(),
    id: z.string().optional(),
    attributes: z.object(variableAttributes).partial(),
  }),
});

export function varsetRoutes(router: Router, model: RunsModel): void {
  const { handler, ids, sealer } = model.core;

  /** A set of an organization the caller owns; otherwise not found. */
  const owned = (ctx: Context, id: string): VarsetRow => {
    const v = model.varsets.get(id);
    if (v === null || !model.orgs.owns(model.principal(ctx), v.organization))
      throw new NotFoundError(`variable set ${id} not found`);
    return v;
  };
  const present = (v: VarsetRow) => presentVarset(v, model.varsets.variables(v.id));
  const show = (ctx: Context, id: string, status = 200) =>
    send(ctx, status, { data: present(model.varsets.get(id)!) });

  const workspaceIds = (organization: string, list: { id: string }[]) =>
    list.map(({ id }) => {
      const ws = model.workspaces.get(id);
      if (ws === null || ws.organization !== organization)
        throw new NotFoundError(`workspace ${id} not found in ${organization}`);
      return ws.id;
    });
  const projectIds = (organization: string, list: { id: string }[]) =>
    list.map(({ id }) => {
      const p = model.projects.get(id);
      if (p === null || p.organization !== organization)
        throw new NotFoundError(`project ${id} not found in ${organization}`);
      return p.id;
    });
  const notGlobal = (global: boolean, what: string) => {
    if (global)
      throw new ValidationError(
        `a global variable set applies to every workspace; it takes no ${what} (set global to false first)`,
        { title: 'invalid attribute' },
      );
  };
  /** A new variable's data, its value sealed when it is sensitive. */
  const variableData = (a: z.infer<typeof varCreate>): VarsetVariableData => {
    checkKey(a.key, a.category);
    const sensitive = a.sensitive ?? false;
    const plain = a.value ?? '';
    return {
      id: ids.id('var'),
      key: a.key,
      value: sensitive ? sealer.seal(plain) : plain,
      description: a.description ?? null,
      category: a.category,
      hcl: a.hcl ?? false,
      sensitive,
    };
  };
  const taken422 = (organization: string, name: string) =>
    new ConflictError(
      `variable set name ${JSON.stringify(name)} has already been taken in ${organization}`,
      {
        status: 422,
        title: 'invalid attribute',
      },
    );

  router.post('/organizations/:org/varsets', async (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    need(model.orgs.owns(model.principal(ctx), org.name), `creating variable sets in ${org.name}`);
    const d = validate(createBody, ctx.request.body).data;
    const a = d.attributes;
    if (model.varsets.byName(org.name, a.name) !== null) throw taken422(org.name, a.name);
    const global = a.global ?? false;
    const wss = workspaceIds(org.name, d.relationships?.workspaces?.data ?? []);
    const prjs = projectIds(org.name, d.relationships?.projects?.data ?? []);
    if (wss.length > 0) notGlobal(global, 'workspaces');
    if (prjs.length > 0) notGlobal(global, 'projects');
    const id = ids.id('varset');
    await handler.handle(
      id,
      varsetDecider,
      (s) => {
        if (s.exists) throw new ConflictError(`variable set ${id} already exists`);
        // Again where it is decided: another request may have taken the name meanwhile.
        if (model.varsets.byName(org.name, a.name) !== null) throw taken422(org.name, a.name);
        const events: VarsetEvent[] = [
          {
            type: 'VarsetCreated',
            data: {
              id,
              organization: org.name,
              name: a.name,
              description: a.description ?? '',
              global,
              priority: a.priority ?? false,
            },
          },
        ];
        if (wss.length > 0)
          events.push({ type: 'VarsetAppliedToWorkspaces', data: { id, workspaceIds: wss } });
        if (prjs.length > 0)
          events.push({ type: 'VarsetAppliedToProjects', data: { id, projectIds: prjs } });
        const seen: VarsetState = { exists: true, global, variables: new Map() };
        for (const v of d.relationships?.vars?.data ?? []) {
          const data = variableData(v.attributes);
          taken(seen, data.key, data.category, null);
          seen.variables.set(data.id, data);
          events.push({ type: 'VarsetVariableCreated', data: { ...data, varsetId: id } });
        }
        return events;
      },
      model.metadata(ctx),
    );
    show(ctx, id, 201);
  });

  router.get('/organizations/:org/varsets', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    need(model.orgs.owns(model.principal(ctx), org.name), `variable sets of ${org.name}`);
    const q = queryValue(ctx, 'q')?.toLowerCase();
    const all = model.varsets
      .list(org.name)
      .filter((v) => q === undefined || v.name.toLowerCase().includes(q));
    const page = pageOf(ctx);
    send(ctx, 200, {
      data: all.slice((page.number - 1) * page.size, page.number * page.size).map(present),
      ...paginate(ctx, page, { total: all.length }),
    });
  });

  router.get('/varsets/:id', (ctx) =>
    send(ctx, 200, { data: present(owned(ctx, ctx.params.id!)) }),
  );

  const update = async (ctx: RouterContext) => {
    const v = owned(ctx, ctx.params.id!);
    const d = validate(updateBody, ctx.request.body).data;
    const a = d.attributes;
    if (
      a.name !== undefined &&
      a.name !== v.name &&
      model.varsets.byName(v.organization, a.name) !== null
    )
      throw taken422(v.organization, a.name);
    const global = a.global ?? v.global;
    // Given relationships replace the set's workspaces or projects, as the reference's update does.
    const wss =
      d.relationships?.workspaces === undefined
        ? undefined
        : workspaceIds(v.organization, d.relationships.workspaces.data);
    const prjs =
      d.relationships?.projects === undefined
        ? undefined
        : projectIds(v.organization, d.relationships.projects.data);
    if ((wss ?? v.workspaceIds).length > 0) notGlobal(global, 'workspaces');
    if ((prjs ?? v.projectIds).length > 0) notGlobal(global, 'projects');
    await handler.handle(
      v.id,
      varsetDecider,
      (s) => {
        live(v.id, s);
        if (
          a.name !== undefined &&
          a.name !== v.name &&
          model.varsets.byName(v.organization, a.name) !== null
        )
          throw taken422(v.organization, a.name);
        const events: VarsetEvent[] = [];
        const changes = {
          ...(a.name === undefined || a.name === v.name ? {} : { name: a.name }),
          ...(a.description === undefined || a.description === v.description
            ? {}
            : { description: a.description }),
          ...(a.global === undefined || a.global === v.global ? {} : { global: a.global }),
          ...(a.priority === undefined || a.priority === v.priority
            ? {}
            : { priority: a.priority }),
        };
        if (Object.keys(changes).length > 0)
          events.push({ type: 'VarsetUpdated', data: { id: v.id, ...changes } });
        if (wss !== undefined) {
          const gone = v.workspaceIds.filter((w) => !wss.includes(w));
          const added = wss.filter((w) => !v.workspaceIds.includes(w));
          if (gone.length > 0)
            events.push({
              type: 'VarsetRemovedFromWorkspaces',
              data: { id: v.id, workspaceIds: gone },
            });
          if (added.length > 0)
            events.push({
              type: 'VarsetAppliedToWorkspaces',
              data: { id: v.id, workspaceIds: added },
            });
        }
        if (prjs !== undefined) {
          const gone = v.projectIds.filter((p) => !prjs.includes(p));
          const added = prjs.filter((p) => !v.projectIds.includes(p));
          if (gone.length > 0)
            events.push({
              type: 'VarsetRemovedFromProjects',
              data: { id: v.id, projectIds: gone },
            });
          if (added.length > 0)
            events.push({ type: 'VarsetAppliedToProjects', data: { id: v.id, projectIds: added } });
        }
        return events;
      },
      model.metadata(ctx),
    );
    show(ctx, v.id);
  };
  router.patch('/varsets/:id', update);
  router.put('/varsets/:id', update);

  router.delete('/varsets/:id', async (ctx) => {
    const v = owned(ctx, ctx.params.id!);
    await handler.handle(
      v.id,
      varsetDecider,
      (s): VarsetEvent[] => {
        live(v.id, s);
        return [{ type: 'VarsetDeleted', data: { id: v.id } }];
      },
      model.metadata(ctx),
    );
    ctx.status = 204;
  });

  /** Apply to or remove from workspaces or projects: `{"data":[{"type":…,"id":…}]}` → 204. */
  const relate =
    (kind: 'workspaces' | 'projects', apply: boolean) => async (ctx: RouterContext) => {
      const v = owned(ctx, ctx.params.id!);
      const list = validate(refs(kind), ctx.request.body).data;
      const targets =
        kind === 'workspaces'
          ? workspaceIds(v.organization, list)
          : projectIds(v.organization, list);
      if (apply) notGlobal(v.global, kind);
      await handler.handle(
        v.id,
        varsetDecider,
        (s): VarsetEvent[] => {
          live(v.id, s);
          if (targets.length === 0) return [];
          return kind === 'workspaces'
            ? [
                {
                  type: apply ? 'VarsetAppliedToWorkspaces' : 'VarsetRemovedFromWorkspaces',
                  data: { id: v.id, workspaceIds: targets },
                },
              ]
            : [
                {
                  type: apply ? 'VarsetAppliedToProjects' : 'VarsetRemovedFromProjects',
                  data: { id: v.id, projectIds: targets },
                },
              ];
        },
        model.metadata(ctx),
      );
      ctx.status = 204;
    };
  router.post('/varsets/:id/relationships/workspaces', relate('workspaces', true));
  router.delete('/varsets/:id/relationships/workspaces', relate('workspaces', false));
  router.post('/varsets/:id/relationships/projects', relate('projects', true));
  router.delete('/varsets/:id/relationships/projects', relate('projects', false));

  router.get('/varsets/:id/relationships/vars', (ctx) => {
    const v = owned(ctx, ctx.params.id!);
    send(ctx, 200, { data: model.varsets.variables(v.id).map(presentVarsetVariable) });
  });

  router.post('/varsets/:id/relationships/vars', async (ctx) => {
    const v = owned(ctx, ctx.params.id!);
    const data = variableData(validate(varCreateBody, ctx.request.body).data.attributes);
    await handler.handle(
      v.id,
      varsetDecider,
      (s): VarsetEvent[] => {
        live(v.id, s);
        taken(s, data.key, data.category, null);
        return [{ type: 'VarsetVariableCreated', data: { ...data, varsetId: v.id } }];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentVarsetVariable(model.varsets.variable(data.id)!) });
  });

  const variableOf = (ctx: RouterContext) => {
    const v = owned(ctx, ctx.params.id!);
    const current = model.varsets.variable(ctx.params.varId!);
    if (current === null || current.varsetId !== v.id)
      throw new NotFoundError(`variable ${ctx.params.varId} not found in variable set ${v.id}`);
    return { v, current };
  };

  router.patch('/varsets/:id/relationships/vars/:varId', async (ctx) => {
    const { v, current } = variableOf(ctx);
    const a = validate(varUpdateBody, ctx.request.body).data.attributes;
    if (current.sensitive && a.sensitive === false)
      throw new ValidationError(
        '/data/attributes/sensitive: a sensitive variable cannot be made non-sensitive',
        { title: 'invalid attribute' },
      );
    const key = a.key ?? current.key;
    const category = a.category ?? current.category;
    checkKey(key, category);
    const sensitive = a.sensitive ?? current.sensitive;
    // Making a variable sensitive seals its current value too.
    const plain = a.value ?? (typeof current.value === 'string' ? current.value : null);
    await handler.handle(
      v.id,
      varsetDecider,
      (s): VarsetEvent[] => {
        live(v.id, s);
        taken(s, key, category, current.id);
        return [
          {
            type: 'VarsetVariableUpdated',
            data: {
              varsetId: v.id,
              id: current.id,
              ...(a.key === undefined ? {} : { key: a.key }),
              ...(a.description === undefined ? {} : { description: a.description }),
              ...(a.category === undefined ? {} : { category: a.category }),
              ...(a.hcl === undefined ? {} : { hcl: a.hcl }),
              ...(a.sensitive === undefined ? {} : { sensitive: a.sensitive }),
              ...(plain === null ? {} : { value: sensitive ? sealer.seal(plain) : plain }),
            },
          },
        ];
      },
      model.metadata(ctx),
    );
    send(ctx, 200, { data: presentVarsetVariable(model.varsets.variable(current.id)!) });
  });

  router.delete('/varsets/:id/relationships/vars/:varId', async (ctx) => {
    const { v, current } = variableOf(ctx);
    await handler.handle(
      v.id,
      varsetDecider,
      (s): VarsetEvent[] => {
        live(v.id, s);
        return [{ type: 'VarsetVariableDeleted', data: { varsetId: v.id, id: current.id } }];
      },
      model.metadata(ctx),
    );
    ctx.status = 204;
  });

  router.get('/workspaces/:id/varsets', (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.variables !== 'none', `variable sets of workspace ${ws.id}`);
    send(ctx, 200, { data: model.varsets.forWorkspace(ws).map(({ set }) => present(set)) });
  });

  router.get('/projects/:id/varsets', (ctx) => {
    const p = model.projects.get(ctx.params.id!);
    if (p === null || !model.orgs.owns(model.principal(ctx), p.organization))
      throw new NotFoundError(`project ${ctx.params.id} not found`);
    send(ctx, 200, { data: model.varsets.forProject(p.organization, p.id).map(present) });
  });
}
