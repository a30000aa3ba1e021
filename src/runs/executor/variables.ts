import type Router from '@koa/router';
import { z } from 'zod';
import type { Core } from '../../context.js';
import type { Decider } from '../../core/command-handler.js';
import { ConflictError, NotFoundError, ValidationError } from '../../core/errors.js';
import type { StoredEvent } from '../../core/events.js';
import { isSealed } from '../../core/seal.js';
import { API, send } from '../jsonapi.js';
import type { RunsModel } from '../model.js';
import { need } from '../model.js';
import { validate } from '../run/schema.js';
import type { ExecutorEvent, WorkspaceVariableCreated } from './events.js';
import type { ExecutorQueries, VariableRow } from './projection.js';

/**
 * `/workspaces/:id/vars`: terraform and env variables of a workspace. A sensitive value is sealed
 * in the event that records it and is never returned (the API shows `value: null`).
 */

type VariableState = { exists: false } | { exists: true; workspaceId: string; sensitive: boolean };

export const variableDecider: Decider<VariableState, ExecutorEvent> = {
  initialState: () => ({ exists: false }),
  evolve: (state, event: StoredEvent<ExecutorEvent>) => {
    switch (event.type) {
      case 'WorkspaceVariableCreated':
        return {
          exists: true,
          workspaceId: event.data.workspaceId,
          sensitive: event.data.sensitive,
        };
      case 'WorkspaceVariableUpdated':
        return state.exists
          ? { ...state, sensitive: event.data.sensitive ?? state.sensitive }
          : state;
      case 'WorkspaceVariableDeleted':
        return { exists: false };
      case 'PlanArtifactRecorded':
        return state;
      default: {
        const _never: never = event;
        return _never;
      }
    }
  },
};

const category = z
  .enum(['terraform', 'env'])
  .describe('terraform variables feed the configuration; env variables the process environment');
/** A variable's attributes (workspace variables and variable sets' variables alike). */
export const variableAttributes = {
  key: z.string().min(1).max(128).describe('the variable name'),
  value: z
    .string()
    .max(256 * 1024)
    .nullable()
    .describe('the value; for hcl variables an HCL literal'),
  description: z.string().max(512).nullable(),
  category,
  hcl: z.boolean(),
  sensitive: z.boolean().describe('sensitive values are write-only'),
};
const createBody = z.object({
  data: z.object({
    type: z.literal('vars'),
    attributes: z
      .object({ ...variableAttributes, category, key: variableAttributes.key })
      .partial({ value: true, description: true, hcl: true, sensitive: true }),
  }),
});
const updateBody = z.object({
  data: z.object({
    type: z.literal('vars'),
    id: z.string().optional(),
    attributes: z.object(variableAttributes).partial(),
  }),
});

const TERRAFORM_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A terraform variable's or an environment variable's name, as the category wants it. */
export function checkKey(key: string, kind: 'terraform' | 'env'): void {
  if (!(kind === 'terraform' ? TERRAFORM_KEY : ENV_KEY).test(key)) {
    throw new ValidationError(
      `/data/attributes/key: "${key}" is not a valid ${kind === 'terraform' ? 'terraform variable name' : 'environment variable name'}`,
      { title: 'invalid attribute' },
    );
  }
}

/** A variable's attributes on the wire (a variable set's too); sensitive values are never shown. */
export function variableWireAttributes(
  v: Pick<VariableRow, 'key' | 'value' | 'sensitive' | 'category' | 'hcl' | 'description'>,
) {
  return {
    key: v.key,
    value: v.sensitive || isSealed(v.value) ? null : v.value,
    sensitive: v.sensitive,
    category: v.category,
    hcl: v.hcl,
    description: v.description,
  };
}

/** The wire shape of a variable; sensitive values are never shown. */
export function presentVariable(v: VariableRow, createdAt: string | null = null) {
  return {
    id: v.id,
    type: 'vars',
    attributes: {
      ...variableWireAttributes(v),
      ...(createdAt ? { 'created-at': createdAt } : {}),
    },
    relationships: {
      configurable: {
        data: { id: v.workspaceId, type: 'workspaces' },
        links: { related: `${API}/workspaces/${v.workspaceId}` },
      },
    },
    links: { self: `${API}/workspaces/${v.workspaceId}/vars/${v.id}` },
  };
}

/** The variable routes of a workspace. */
export function variableRoutes(
  router: Router,
  core: Core,
  model: RunsModel,
  queries: ExecutorQueries,
): void {
  const variableOf = (workspaceId: string, id: string): VariableRow => {
    const v = queries.variable(id);
    if (v === null || v.workspaceId !== workspaceId)
      throw new NotFoundError(`variable ${id} not found`);
    return v;
  };
  const taken = (workspaceId: string, key: string, kind: string, except: string | null) =>
    queries
      .variables(workspaceId)
      .some((v) => v.key === key && v.category === kind && v.id !== except);

  router.get('/workspaces/:id/vars', (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id ?? '');
    need(access.variables !== 'none', `variables of workspace ${ws.id}`);
    send(ctx, 200, { data: queries.variables(ws.id).map((v) => presentVariable(v)) });
  });

  router.post('/workspaces/:id/vars', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id ?? '');
    need(access.variables === 'write', `variables of workspace ${ws.id}`);
    const a = validate(createBody, ctx.request.body).data.attributes;
    checkKey(a.key, a.category);
    if (taken(ws.id, a.key, a.category, null)) {
      throw new ValidationError(`/data/attributes/key: ${a.key} has already been taken`, {
        title: 'invalid attribute',
      });
    }
    const sensitive = a.sensitive ?? false;
    const plain = a.value ?? '';
    const data: WorkspaceVariableCreated['data'] = {
      id: core.ids.id('var'),
      workspaceId: ws.id,
      key: a.key,
      value: sensitive ? core.sealer.seal(plain) : plain,
      description: a.description ?? null,
      category: a.category,
      hcl: a.hcl ?? false,
      sensitive,
    };
    // The key is checked again where the command is decided: another request may have taken it.
    const { events } = await core.handler.handle(
      data.id,
      variableDecider,
      () => {
        if (taken(ws.id, a.key, a.category, null))
          throw new ValidationError(`/data/attributes/key: ${a.key} has already been taken`, {
            title: 'invalid attribute',
          });
        return [{ type: 'WorkspaceVariableCreated' as const, data }];
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: presentVariable(data, events[0]?.time ?? null) });
  });

  router.patch('/workspaces/:id/vars/:varId', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id ?? '');
    need(access.variables === 'write', `variables of workspace ${ws.id}`);
    const current = variableOf(ws.id, ctx.params.varId ?? '');
    const a = validate(updateBody, ctx.request.body).data.attributes;
    if (current.sensitive && a.sensitive === false) {
      throw new ValidationError(
        '/data/attributes/sensitive: a sensitive variable cannot be made non-sensitive',
        { title: 'invalid attribute' },
      );
    }
    const key = a.key ?? current.key;
    const kind = a.category ?? current.category;
    checkKey(key, kind);
    if (taken(ws.id, key, kind, current.id)) {
      throw new ValidationError(`/data/attributes/key: ${key} has already been taken`, {
        title: 'invalid attribute',
      });
    }
    const sensitive = a.sensitive ?? current.sensitive;
    // Making a variable sensitive seals its current value too.
    const plain = a.value ?? (isSealed(current.value) ? null : current.value);
    const update = {
      ...(a.key === undefined ? {} : { key: a.key }),
      ...(a.description === undefined ? {} : { description: a.description }),
      ...(a.category === undefined ? {} : { category: a.category }),
      ...(a.hcl === undefined ? {} : { hcl: a.hcl }),
      ...(a.sensitive === undefined ? {} : { sensitive: a.sensitive }),
      ...(plain === null ? {} : { value: sensitive ? core.sealer.seal(plain) : plain }),
    };
    await core.handler.handle(
      current.id,
      variableDecider,
      (s) => {
        if (!s.exists) throw new ConflictError(`variable ${current.id} was deleted`);
        if (taken(ws.id, key, kind, current.id))
          throw new ValidationError(`/data/attributes/key: ${key} has already been taken`, {
            title: 'invalid attribute',
          });
        return [{ type: 'WorkspaceVariableUpdated' as const, data: update }];
      },
      model.metadata(ctx),
    );
    const updated = queries.variable(current.id);
    if (updated === null) throw new NotFoundError(`variable ${current.id} not found`);
    send(ctx, 200, { data: presentVariable(updated) });
  });

  router.delete('/workspaces/:id/vars/:varId', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id ?? '');
    need(access.variables === 'write', `variables of workspace ${ws.id}`);
    const current = variableOf(ws.id, ctx.params.varId ?? '');
    await core.handler.handle(
      current.id,
      variableDecider,
      () => [{ type: 'WorkspaceVariableDeleted' as const, data: { id: current.id } }],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}
