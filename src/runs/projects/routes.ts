import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ConflictError, NotFoundError } from '../../core/errors.js';
import type { RunsPrincipal } from '../../http/types.js';
import { listFilter, pageOf, paginate, queryValue, send } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { createProject, deleteProject, projectDecider, updateProject } from './decider.js';
import { presentProject } from './presenters.js';
import type { ProjectRow } from './projection.js';

/** Projects: CRUD under an organization and by id (`/api/v2/projects/:id`). */

/** The reference's rule: letters, digits, spaces, `-` and `_`, 3 to 40, no space at either end. */
const NAME = /^(?! )[A-Za-z0-9 _-]{3,40}(?<! )$/;
const NAME_RULE =
  'letters, digits, spaces, - and _ only, 3 to 40 characters, not starting or ending with a space';

/**
 * Only the attributes Keel implements are accepted: a project's workspace defaults
 * (`default-execution-mode`, `auto-destroy-activity-duration`, `setting-overwrites`) are refused
 * by name rather than stored and ignored.
 */
const attributes = {
  name: z.string().regex(NAME, NAME_RULE),
  description: z.string().max(256).nullable().optional(),
};
const createBody = z.object({
  data: z.object({
    type: z.literal('projects').optional(),
    attributes: z.object(attributes).strict(),
  }),
});
const updateBody = z.object({
  data: z.object({
    type: z.literal('projects').optional(),
    attributes: z.object({ ...attributes, name: attributes.name.optional() }).strict(),
  }),
});

const taken = (organization: string, name: string) =>
  new ConflictError(
    `project name ${JSON.stringify(name)} has already been taken in ${organization}`,
    {
      status: 422,
      title: 'invalid attribute',
    },
  );

export function projectRoutes(router: Router, model: RunsModel): void {
  const { handler } = model.core;

  /**
   * Owners see every project; other members those their teams have access to, and those holding a
   * workspace they can read.
   */
  const visible = (principal: RunsPrincipal, p: ProjectRow): boolean =>
    model.orgs.owns(principal, p.organization) ||
    model.orgs.hasProjectGrant(principal, p.id) ||
    model.projects.workspaceIds(p.id).some((id) => {
      const ws = model.workspaces.get(id);
      return ws !== null && model.orgs.accessTo(principal, ws).read;
    });
  const present = (ctx: Context, p: ProjectRow) =>
    presentProject(
      p,
      model.projects.workspaceIds(p.id).length,
      model.orgs.owns(model.principal(ctx), p.organization),
    );

  router.post('/organizations/:org/projects', async (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    need(model.orgs.owns(model.principal(ctx), org.name), `creating projects in ${org.name}`);
    const a = validate(createBody, ctx.request.body).data.attributes;
    const unique = () => {
      if (model.projects.byName(org.name, a.name) !== null) throw taken(org.name, a.name);
    };
    unique();
    const id = model.core.ids.id('prj');
    // The name is checked again where the command is decided: another request may have taken it.
    await handler.handle(
      id,
      projectDecider,
      (state) => {
        unique();
        return createProject({
          id,
          organization: org.name,
          name: a.name,
          description: a.description ?? null,
        })(state);
      },
      model.metadata(ctx),
    );
    send(ctx, 201, { data: present(ctx, model.projects.get(id)!) });
  });

  router.get('/organizations/:org/projects', (ctx) => {
    const org = model.organization(ctx, ctx.params.org!);
    const principal = model.principal(ctx);
    const page = pageOf(ctx);
    const names = listFilter(ctx, 'filter[names]');
    const q = queryValue(ctx, 'q')?.toLowerCase();
    const all = model.projects
      .list(org.name)
      .filter((p) => names === null || names.includes(p.name))
      .filter((p) => q === undefined || p.name.toLowerCase().includes(q))
      .filter((p) => visible(principal, p));
    const rows = all.slice((page.number - 1) * page.size, page.number * page.size);
    send(ctx, 200, {
      data: rows.map((p) => present(ctx, p)),
      ...paginate(ctx, page, { total: all.length }),
    });
  });

  const project = (ctx: Context, id: string): ProjectRow => {
    const p = model.projects.get(id);
    if (p === null || !model.orgs.belongs(model.principal(ctx), p.organization))
      throw new NotFoundError(`project ${id} not found`);
    if (!visible(model.principal(ctx), p)) throw new NotFoundError(`project ${id} not found`);
    return p;
  };

  router.get('/projects/:id', (ctx) =>
    send(ctx, 200, { data: present(ctx, project(ctx, ctx.params.id!)) }),
  );

  router.patch('/projects/:id', async (ctx) => {
    const p = project(ctx, ctx.params.id!);
    need(model.orgs.owns(model.principal(ctx), p.organization), `updating project ${p.id}`);
    const a = validate(updateBody, ctx.request.body).data.attributes;
    const unique = () => {
      if (
        a.name !== undefined &&
        a.name !== p.name &&
        model.projects.byName(p.organization, a.name) !== null
      )
        throw taken(p.organization, a.name);
    };
    unique();
    await handler.handle(
      p.id,
      projectDecider,
      (state) => {
        unique();
        return updateProject({
          id: p.id,
          ...(a.name === undefined || a.name === p.name ? {} : { name: a.name }),
          ...(a.description === undefined || a.description === p.description
            ? {}
            : { description: a.description }),
        })(state);
      },
      model.metadata(ctx),
    );
    send(ctx, 200, { data: present(ctx, model.projects.get(p.id)!) });
  });

  router.delete('/projects/:id', async (ctx) => {
    const p = project(ctx, ctx.params.id!);
    need(model.orgs.owns(model.principal(ctx), p.organization), `deleting project ${p.id}`);
    if (p.isDefault)
      throw new ConflictError(
        `project ${p.id} is the default project of ${p.organization}; it cannot be deleted`,
        {
          status: 422,
          title: 'invalid attribute',
        },
      );
    const empty = () => {
      const count = model.projects.workspaceIds(p.id).length;
      if (count > 0)
        throw new ConflictError(
          `project ${p.id} still holds ${count} workspace(s); move or delete them before deleting the project`,
          { status: 422, title: 'invalid attribute' },
        );
    };
    empty();
    // Checked again where it is decided: a workspace may have moved in meanwhile.
    await handler.handle(
      p.id,
      projectDecider,
      (state) => {
        empty();
        return deleteProject(p.id)(state);
      },
      model.metadata(ctx),
    );
    ctx.status = 204;
  });
}
