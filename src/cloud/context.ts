import type { Ids } from '../core/ids.js';
import type { Params } from './params.js';
import type { Policy } from './policy.js';
import type { CloudStore, GroupRow, RoleRow, UserRow } from './store.js';
import { members } from './xml.js';
import type { XmlNode } from './xml.js';

/** Who signed a request. */
export interface Principal {
  kind: 'user' | 'assumed-role' | 'federated-user' | 'session';
  arn: string;
  /** What GetCallerIdentity reports as `UserId`. */
  userId: string;
  accessKeyId: string;
  /** The IAM user behind the key (for `user`, `session` and `federated-user`). */
  userName: string | null;
  roleName: string | null;
  /** Session policies that further limit temporary credentials; null when none were given. */
  sessionPolicies: Policy[] | null;
}

/** Everything an action needs; nothing global. */
export interface ActionContext {
  store: CloudStore;
  params: Params;
  principal: Principal;
  now: Date;
  account: string;
  ids: Ids;
}

/** One Query-protocol action: the resource it is authorised against, and what it does. */
export interface Action {
  /** The ARN the caller's policies are checked against; null skips the policy check. */
  resource(c: ActionContext): string | null;
  /** The `<ActionResult>` content, or null for actions that answer only `ResponseMetadata`. */
  run(c: ActionContext): XmlNode | null;
}

/** Timestamps on the wire: ISO 8601 UTC with milliseconds. */
export const stamp = (d: Date): string => d.toISOString();

const upper = (ids: Ids, n: number): string =>
  ids
    .secret(n)
    .toUpperCase()
    .replace(/[^A-Z0-9]/g, 'X');

/** Minted identifiers, shaped like AWS's. */
export const mint = {
  accessKeyId: (ids: Ids, temporary: boolean): string =>
    `${temporary ? 'ASIA' : 'AKIA'}${upper(ids, 16)}`,
  uniqueId: (ids: Ids, prefix: 'AIDA' | 'AROA' | 'AGPA' | 'ANPA'): string =>
    `${prefix}${upper(ids, 17)}`,
  secretKey: (ids: Ids): string => ids.secret(40),
  sessionToken: (ids: Ids): string => `IQoJb3JpZ2luX2Vj${ids.secret(240)}`,
};

/** ARNs of the account's entities. */
export const arn = {
  user: (account: string, path: string, name: string): string =>
    `arn:aws:iam::${account}:user${path}${name}`,
  group: (account: string, path: string, name: string): string =>
    `arn:aws:iam::${account}:group${path}${name}`,
  role: (account: string, path: string, name: string): string =>
    `arn:aws:iam::${account}:role${path}${name}`,
  policy: (account: string, path: string, name: string): string =>
    `arn:aws:iam::${account}:policy${path}${name}`,
  mfa: (account: string, path: string, name: string): string =>
    `arn:aws:iam::${account}:mfa${path}${name}`,
};

/** The wire shape of a user. */
export function presentUser(c: ActionContext, u: UserRow, withTags = false): XmlNode {
  const tags = withTags
    ? c.store.all<{ key: string; value: string }>(
        'SELECT key, value FROM user_tags WHERE user_name = ? ORDER BY key',
        u.name,
      )
    : [];
  return {
    Path: u.path,
    UserName: u.name,
    UserId: u.id,
    Arn: arn.user(c.account, u.path, u.name),
    CreateDate: u.create_date,
    PermissionsBoundary: u.boundary_arn
      ? {
          PermissionsBoundaryType: 'PermissionsBoundaryPolicy',
          PermissionsBoundaryArn: u.boundary_arn,
        }
      : undefined,
    Tags: tags.length > 0 ? members(tags.map((t) => ({ Key: t.key, Value: t.value }))) : undefined,
  };
}

/** The wire shape of a group. */
export const presentGroup = (c: ActionContext, g: GroupRow): XmlNode => ({
  Path: g.path,
  GroupName: g.name,
  GroupId: g.id,
  Arn: arn.group(c.account, g.path, g.name),
  CreateDate: g.create_date,
});

/** The wire shape of a role; documents go out URL-encoded, as IAM sends them. */
export const presentRole = (c: ActionContext, r: RoleRow): XmlNode => ({
  Path: r.path,
  RoleName: r.name,
  RoleId: r.id,
  Arn: arn.role(c.account, r.path, r.name),
  CreateDate: r.create_date,
  AssumeRolePolicyDocument: encodeURIComponent(r.trust),
  Description: r.description ?? undefined,
  MaxSessionDuration: r.max_session,
});
