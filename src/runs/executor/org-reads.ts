import type Router from '@koa/router';
import { NotFoundError } from '../../core/errors.js';
import { send } from '../jsonapi.js';
import type { RunsModel } from '../model.js';

/** How to read one kind of an organization's resources (policy sets, policies, run tasks). */
export interface OrganizationReads<T extends { organization: string }> {
  /** The path word: `policy-sets` serves `/organizations/:org/policy-sets` and `/policy-sets/:id`. */
  path: string;
  /** The name in a 404's detail, e.g. `policy set`. */
  noun: string;
  /** The organization's resources, in order; without it there is no list route. */
  list?: (organization: string) => T[];
  one: (id: string) => T | null;
  present: (row: T) => unknown;
}

/**
 * `GET /organizations/:org/<path>` and `GET /<path>/:id`, shown to whoever may see the
 * organization (a 404 otherwise, as for a resource that does not exist).
 */
export function organizationReadRoutes<T extends { organization: string }>(
  router: Router,
  model: RunsModel,
  reads: OrganizationReads<T>,
): void {
  const { list } = reads;
  if (list !== undefined) {
    router.get(`/organizations/:org/${reads.path}`, (ctx) => {
      const org = model.organization(ctx, ctx.params.org ?? '');
      send(ctx, 200, { data: list(org.name).map(reads.present) });
    });
  }
  router.get(`/${reads.path}/:id`, (ctx) => {
    const id = ctx.params.id ?? '';
    const row = reads.one(id);
    if (row === null) throw new NotFoundError(`${reads.noun} ${id} not found`);
    model.organization(ctx, row.organization);
    send(ctx, 200, { data: reads.present(row) });
  });
}
