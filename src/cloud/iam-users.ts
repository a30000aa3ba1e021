import type { Action, ActionContext } from './context.js';
import { mint, presentUser, stamp } from './context.js';
import { CloudError, validationError } from './errors.js';
import {
  DELETE_CONFLICT,
  listResult,
  listUnderPath,
  requireAttachable,
  requireNoDependents,
  requireUser,
  targetUserName,
  userResource,
} from './iam-common.js';
import { principalPolicyActions } from './iam-principal-policies.js';
import { checkName, checkPath } from './params.js';
import type { KeyRow, UserRow } from './store.js';

/** IAM allows two access keys per user. */
export const MAX_KEYS_PER_USER = 2;

const named = (c: ActionContext): string =>
  checkName(c.params.required('UserName'), 'userName', 64);
const byName = (c: ActionContext): string => userResource(c, named(c));
const self = (c: ActionContext): string => userResource(c, targetUserName(c));

function putTags(c: ActionContext, userName: string): void {
  const tags = c.params.tags();
  const existing = c.store.all<{ key: string }>(
    'SELECT key FROM user_tags WHERE user_name = ?',
    userName,
  );
  const keys = new Set([...existing.map((t) => t.key), ...tags.map((t) => t.Key)]);
  if (keys.size > 50) {
    throw new CloudError('LimitExceeded', 'Cannot exceed quota for TagsPerUser: 50');
  }
  for (const t of tags) {
    checkName(t.Key, 'tags.member.key', 128);
    c.store.run(
      'INSERT OR REPLACE INTO user_tags (user_name, key, value) VALUES (?, ?, ?)',
      userName,
      t.Key,
      t.Value,
    );
  }
}

const keyMeta = (k: KeyRow) => ({
  UserName: k.user_name,
  AccessKeyId: k.id,
  Status: k.status,
  CreateDate: k.create_date,
});

function requireKey(c: ActionContext, userName: string): KeyRow {
  const id = c.params.required('AccessKeyId');
  const k = c.store.get<KeyRow>(
    'SELECT * FROM access_keys WHERE id = ? AND user_name = ?',
    id,
    userName,
  );
  if (!k) throw new CloudError('NoSuchEntity', `The Access Key with id ${id} cannot be found.`);
  return k;
}

/** Users, their access keys, tags and user policies. */
export const userActions: Record<string, Action> = {
  CreateUser: {
    resource: (c) => userResource(c, named(c), checkPath(c.params.get('Path'))),
    run: (c) => {
      const name = named(c);
      const path = checkPath(c.params.get('Path'));
      const boundaryArn = c.params.get('PermissionsBoundary') || null;
      if (c.store.user(name)) {
        throw new CloudError('EntityAlreadyExists', `User with name ${name} already exists.`);
      }
      if (boundaryArn) requireAttachable(c, boundaryArn);
      c.store.tx(() => {
        c.store.run(
          'INSERT INTO users (name, id, path, create_date, boundary_arn) VALUES (?, ?, ?, ?, ?)',
          name,
          mint.uniqueId(c.ids, 'AIDA'),
          path,
          stamp(c.now),
          boundaryArn,
        );
        putTags(c, name);
      });
      return { User: presentUser(c, requireUser(c, name), true) };
    },
  },
  GetUser: {
    resource: self,
    run: (c) => ({ User: presentUser(c, requireUser(c, targetUserName(c)), true) }),
  },
  ListUsers: {
    resource: (c) => `arn:aws:iam::${c.account}:user/`,
    run: (c) => listUnderPath<UserRow>(c, 'users', 'Users', (u) => presentUser(c, u)),
  },
  DeleteUser: {
    resource: byName,
    run: (c) => {
      const u = requireUser(c, named(c));
      requireNoDependents(c, 'user_name', u.name, [
        ['access_keys', DELETE_CONFLICT.accessKeys],
        ['user_policies', DELETE_CONFLICT.inlinePolicies],
        ['user_attached', DELETE_CONFLICT.attachedPolicies],
        ['group_members', DELETE_CONFLICT.members],
        ['mfa_devices', DELETE_CONFLICT.mfaDevices],
      ]);
      c.store.tx(() => {
        c.store.run('DELETE FROM user_tags WHERE user_name = ?', u.name);
        c.store.run('DELETE FROM users WHERE name = ?', u.name);
      });
      return null;
    },
  },
  CreateAccessKey: {
    resource: self,
    run: (c) => {
      const u = requireUser(c, targetUserName(c));
      const n =
        c.store.get<{ n: number }>(
          'SELECT COUNT(*) AS n FROM access_keys WHERE user_name = ?',
          u.name,
        )?.n ?? 0;
      if (n >= MAX_KEYS_PER_USER) {
        throw new CloudError(
          'LimitExceeded',
          `Cannot exceed quota for AccessKeysPerUser: ${MAX_KEYS_PER_USER}`,
        );
      }
      const secret = mint.secretKey(c.ids);
      const key: KeyRow = {
        id: mint.accessKeyId(c.ids, false),
        user_name: u.name,
        secret: c.store.seal(secret),
        status: 'Active',
        create_date: stamp(c.now),
      };
      c.store.run(
        'INSERT INTO access_keys (id, user_name, secret, status, create_date) VALUES (?, ?, ?, ?, ?)',
        key.id,
        key.user_name,
        key.secret,
        key.status,
        key.create_date,
      );
      return { AccessKey: { ...keyMeta(key), SecretAccessKey: secret } };
    },
  },
  ListAccessKeys: {
    resource: self,
    run: (c) => {
      const u = requireUser(c, targetUserName(c));
      const keys = c.store.all<KeyRow>(
        'SELECT * FROM access_keys WHERE user_name = ? ORDER BY create_date, id',
        u.name,
      );
      return listResult(c.params, 'AccessKeyMetadata', keys, keyMeta);
    },
  },
  DeleteAccessKey: {
    resource: self,
    run: (c) => {
      const k = requireKey(c, requireUser(c, targetUserName(c)).name);
      c.store.run('DELETE FROM access_keys WHERE id = ?', k.id);
      return null;
    },
  },
  UpdateAccessKey: {
    resource: self,
    run: (c) => {
      const status = c.params.required('Status');
      if (status !== 'Active' && status !== 'Inactive') {
        throw validationError(
          'status',
          status,
          'Member must satisfy enum value set: [Active, Inactive]',
        );
      }
      const k = requireKey(c, requireUser(c, targetUserName(c)).name);
      c.store.run('UPDATE access_keys SET status = ? WHERE id = ?', status, k.id);
      return null;
    },
  },
  TagUser: {
    resource: byName,
    run: (c) => {
      const u = requireUser(c, named(c));
      if (c.params.tags().length === 0)
        throw validationError('tags', null, 'Member must not be null');
      c.store.tx(() => putTags(c, u.name));
      return null;
    },
  },
  UntagUser: {
    resource: byName,
    run: (c) => {
      const u = requireUser(c, named(c));
      for (const key of c.params.list('TagKeys')) {
        c.store.run('DELETE FROM user_tags WHERE user_name = ? AND key = ?', u.name, key);
      }
      return null;
    },
  },
  ListUserTags: {
    resource: byName,
    run: (c) => {
      const u = requireUser(c, named(c));
      const tags = c.store.all<{ key: string; value: string }>(
        'SELECT key, value FROM user_tags WHERE user_name = ? ORDER BY key',
        u.name,
      );
      return listResult(c.params, 'Tags', tags, (t) => ({ Key: t.key, Value: t.value }));
    },
  },
  ...principalPolicyActions({
    kind: 'User',
    resource: byName,
    require: (c) => requireUser(c, named(c)),
  }),
};
