import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ValidationError } from '../../core/errors.js';
import type { TagBinding } from '../events.js';
import { send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { updateWorkspace, workspaceDecider } from './decider.js';
import { tagId } from './presenters.js';
import type { WorkspaceRow } from './projection.js';

/**
 * Workspace tags as the terraform CLI's `workspaces { tags = … }` uses them: tag names
 * (`relationships/tags`, `search[tags]` on lists) and key/value tag bindings (`tag-bindings`).
 */

const TAG = /^[A-Za-z0-9][A-Za-z0-9:_-]{0,254}$/;
const tagName = z.string().regex(TAG, 'letters, digits, :, _ and - (at most 255), not - first');

/** `{"data": [{"type": "tags", "attributes": {"name": …}} | {"type": "tags", "id": …}]}`. */
export const tagsDocument = z.object({
  data: z.array(
    z.object({
      type: z.literal('tags'),
      id: z.string().optional(),
      attributes: z.object({ name: tagName }).optional(),
    }),
  ),
});

/** The names a tags document names, by name or by id (ids are Keel's `tagId`s). */
export function tagNames(
  doc: z.infer<typeof tagsDocument> | undefined,
  organization?: string,
): string[] | undefined {
  if (doc === undefined) return undefined;
  return doc.data.map((t, i) => {
    if (t.attributes !== undefined) return t.attributes.name;
    const name =
      t.id === undefined || organization === undefined ? null : nameOfTagId(organization, t.id);
    if (name === null)
      throw new ValidationError(`/data/${i}: a tag needs attributes.name or a known id`);
    return name;
  });
}

function nameOfTagId(organization: string, id: string): string | null {
  if (!id.startsWith('tag-')) return null;
  const decoded = Buffer.from(id.slice(4), 'base64url').toString('utf8');
  return decoded.startsWith(`${organization}/`) ? decoded.slice(organization.length + 1) : null;
}

export const bindingsDocument = z.object({
  data: z.array(
    z.object({
      type: z.literal('tag-bindings'),
      attributes: z.object({ key: tagName, value: z.string().max(255).optional() }),
    }),
  ),
});

/** The bindings a document names, a missing value as empty. */
export const bindingsOf = (doc: z.infer<typeof bindingsDocument>): TagBinding[] =>
  doc.data.map((b) => ({ key: b.attributes.key, value: b.attributes.value ?? '' }));

const presentTag = (ws: WorkspaceRow, name: string) => ({
  id: tagId(ws.organization, name),
  type: 'tags',
  attributes: { name },
});

const presentBinding = (ws: WorkspaceRow, b: TagBinding) => ({
  id: `tb-${Buffer.from(`${ws.id}/${b.key}`).toString('base64url')}`,
  type: 'tag-bindings',
  attributes: { key: b.key, value: b.value },
});

export function workspaceTagRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;
  const change = async (
    ctx: Context,
    id: string,
    changes: Parameters<typeof updateWorkspace>[1],
  ): Promise<WorkspaceRow> => {
    const { ws, access } = model.workspace(ctx, id);
    need(access.admin, `tagging workspace ${ws.id}`);
    await handler.handle(
      ws.id,
      workspaceDecider,
      updateWorkspace(ws.id, changes),
      model.metadata(ctx),
    );
    return model.workspaces.get(ws.id)!;
  };
  const names = (ctx: Context, id: string) => {
    const ws = model.workspace(ctx, id).ws;
    return tagNames(validate(tagsDocument, ctx.request.body), ws.organization) ?? [];
  };

  router.get('/workspaces/:id/relationships/tags', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    send(ctx, 200, { data: ws.tags.map((name) => presentTag(ws, name)) });
  });
  router.post('/workspaces/:id/relationships/tags', async (ctx) => {
    await change(ctx, ctx.params.id!, { tagsAdded: names(ctx, ctx.params.id!) });
    ctx.status = 204;
  });
  router.delete('/workspaces/:id/relationships/tags', async (ctx) => {
    await change(ctx, ctx.params.id!, { tagsRemoved: names(ctx, ctx.params.id!) });
    ctx.status = 204;
  });

  router.get('/workspaces/:id/tag-bindings', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    send(ctx, 200, { data: ws.tagBindings.map((b) => presentBinding(ws, b)) });
  });
  /** Adds bindings, or gives existing keys a new value; answers with all of them. */
  router.patch('/workspaces/:id/tag-bindings', async (ctx) => {
    const doc = validate(bindingsDocument, ctx.request.body);
    const ws = await change(ctx, ctx.params.id!, { tagBindings: bindingsOf(doc) });
    send(ctx, 200, { data: ws.tagBindings.map((b) => presentBinding(ws, b)) });
  });
}
