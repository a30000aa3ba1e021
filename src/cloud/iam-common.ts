import type { Action, ActionContext } from './context.js';
import { arn } from './context.js';
import { CloudError, validationError } from './errors.js';
import type { Params } from './params.js';
import { managedDocument } from './permissions.js';
import { checkName, checkPath } from './params.js';
import type { UserRow } from './store.js';
import type { XmlNode } from './xml.js';
import { members } from './xml.js';

/** The user named by `UserName`, or NoSuchEntity as IAM words it. */
export function requireUser(c: ActionContext, name: string): UserRow {
  const u = c.store.user(name);
  if (!u) throw new CloudError('NoSuchEntity', `The user with name ${name} cannot be found.`);
  return u;
}

/**
 * `UserName` when given, otherwise the caller's own user: IAM's rule for GetUser,
 * CreateAccessKey, ListAccessKeys and friends.
 */
export function targetUserName(c: ActionContext): string {
  const given = c.params.get('UserName');
  if (given) return checkName(given, 'userName', 64);
  if (c.principal.kind === 'user' || c.principal.kind === 'session') {
    if (c.principal.userName) return c.principal.userName;
  }
  throw validationError(
    'userName',
    null,
    'Must specify userName when calling with non-User credentials',
  );
}

/** The ARN a user action is authorised against (the user need not exist yet). */
export function userResource(c: ActionContext, name: string, path?: string): string {
  const u = c.store.user(name);
  return arn.user(c.account, u?.path ?? path ?? '/', u?.name ?? name);
}

/**
 * A group or role as its actions name it: the name parameter checked, the entity or
 * NoSuchEntity as IAM words it, and the ARN the action is authorised against (before it exists,
 * from the `Path` parameter).
 */
export function pathedEntity<R extends { name: string; path: string }>(k: {
  kind: 'group' | 'role';
  param: 'GroupName' | 'RoleName';
  max: number;
  find: (c: ActionContext, name: string) => R | undefined;
}) {
  const field = k.param[0]!.toLowerCase() + k.param.slice(1);
  const named = (c: ActionContext): string => checkName(c.params.required(k.param), field, k.max);
  const require = (c: ActionContext, name: string): R => {
    const row = k.find(c, name);
    if (!row)
      throw new CloudError('NoSuchEntity', `The ${k.kind} with name ${name} cannot be found.`);
    return row;
  };
  const resource = (c: ActionContext): string => {
    const name = named(c);
    const row = k.find(c, name);
    return arn[k.kind](c.account, row?.path ?? checkPath(c.params.get('Path')), row?.name ?? name);
  };
  /** `Delete<Kind>`: refused while any of `dependents` (see requireNoDependents) remains. */
  const deleteAction = (dependents: Dependents): Action => ({
    resource,
    run: (c) => {
      const row = require(c, named(c));
      requireNoDependents(c, `${k.kind}_name`, row.name, dependents);
      c.store.run(`DELETE FROM ${k.kind}s WHERE name = ?`, row.name);
      return null;
    },
  });
  return { named, require, resource, deleteAction };
}

/** Marker/MaxItems paging over an already-sorted list; the marker is an opaque offset. */
export function paginate<T>(
  params: Params,
  items: readonly T[],
): { page: T[]; IsTruncated: boolean; Marker: string | undefined } {
  const max = params.int('MaxItems', 1, 1000) ?? 100;
  const markerText = params.get('Marker');
  const start = markerText ? Number.parseInt(markerText, 10) : 0;
  if (!Number.isInteger(start) || start < 0) {
    throw validationError(
      'marker',
      markerText ?? null,
      'Member must be a marker from a previous page',
    );
  }
  const page = items.slice(start, start + max);
  const more = start + max < items.length;
  return { page, IsTruncated: more, Marker: more ? String(start + max) : undefined };
}

/** A paged list result: `{ [key]: members(...), IsTruncated, Marker }`. */
export function listResult<T>(
  params: Params,
  key: string,
  items: readonly T[],
  present: (item: T) => XmlNode,
): Record<string, XmlNode> {
  const { page, IsTruncated, Marker } = paginate(params, items);
  return { [key]: members(page.map(present)), IsTruncated, Marker };
}

/** A List action's result: the rows of `table` whose path starts with `PathPrefix`, by name. */
export function listUnderPath<T extends { path: string }>(
  c: ActionContext,
  table: string,
  key: string,
  present: (row: T) => XmlNode,
): Record<string, XmlNode> {
  const prefix = c.params.get('PathPrefix') ?? '/';
  const rows = c.store.all<T>(`SELECT * FROM ${table} ORDER BY name`);
  return listResult(
    c.params,
    key,
    rows.filter((r) => r.path.startsWith(prefix)),
    present,
  );
}

/** Checks that a policy ARN can be attached: an existing customer policy or a known AWS one. */
export function requireAttachable(c: ActionContext, policyArn: string): void {
  if (managedDocument(c.store, policyArn) === undefined) {
    throw new CloudError(
      'NoSuchEntity',
      `Policy ${policyArn} does not exist or is not attachable.`,
    );
  }
}

/** The IAM per-entity attachment quota. */
export const MAX_ATTACHED = 10;

/** Why IAM refuses to delete an entity, by what still belongs to it. */
export const DELETE_CONFLICT = {
  accessKeys: 'Cannot delete entity, must delete access keys first.',
  inlinePolicies: 'Cannot delete entity, must delete policies first.',
  attachedPolicies: 'Cannot delete entity, must detach all policies first.',
  members: 'Cannot delete entity, must remove users from group first.',
  mfaDevices: 'Cannot delete entity, must delete MFA device first.',
} as const;

/** What may keep an entity from deletion: `[table, message]`, checked in order. */
type Dependents = readonly (readonly [table: string, message: string])[];

/**
 * Refuses, with IAM's DeleteConflict, to delete the entity whose `column` is `name` while one of
 * `dependents` (`[table, message]`, checked in order) still has rows for it.
 */
export function requireNoDependents(
  c: ActionContext,
  column: string,
  name: string,
  dependents: Dependents,
): void {
  for (const [table, message] of dependents) {
    const n =
      c.store.get<{ n: number }>(`SELECT COUNT(*) AS n FROM ${table} WHERE ${column} = ?`, name)
        ?.n ?? 0;
    if (n > 0) throw new CloudError('DeleteConflict', message);
  }
}
