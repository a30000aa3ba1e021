import type { Action, ActionContext } from './context.js';
import { arn, mint, presentGroup, stamp } from './context.js';
import { CloudError } from './errors.js';
import {
  listResult,
  MAX_ATTACHED,
  requireAttachable,
  requireUser,
  userResource,
} from './iam-common.js';
import { checkName, checkPath } from './params.js';
import { parsePolicy } from './policy.js';
import type { GroupRow } from './store.js';

const named = (c: ActionContext): string =>
  checkName(c.params.required('GroupName'), 'groupName', 128);

function requireGroup(c: ActionContext, name: string): GroupRow {
  const g = c.store.group(name);
  if (!g) throw new CloudError('NoSuchEntity', `The group with name ${name} cannot be found.`);
  return g;
}

const groupResource = (c: ActionContext): string => {
  const name = named(c);
  const g = c.store.group(name);
  return arn.group(c.account, g?.path ?? checkPath(c.params.get('Path')), g?.name ?? name);
};

/** Groups, membership and group policies. */
export const groupActions: Record<string, Action> = {
  CreateGroup: {
    resource: groupResource,
    run: (c) => {
      const name = named(c);
      if (c.store.group(name)) {
        throw new CloudError('EntityAlreadyExists', `Group with name ${name} already exists.`);
      }
      c.store.run(
        'INSERT INTO groups (name, id, path, create_date) VALUES (?, ?, ?, ?)',
        name,
        mint.uniqueId(c.ids, 'AGPA'),
        checkPath(c.params.get('Path')),
        stamp(c.now),
      );
      return { Group: presentGroup(c, requireGroup(c, name)) };
    },
  },
  GetGroup: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const users = c.store.all<{ user_name: string }>(
        'SELECT user_name FROM group_members WHERE group_name = ? ORDER BY user_name',
        g.name,
      );
      return {
        Group: presentGroup(c, g),
        ...listResult(c.params, 'Users', users, (m) => {
          const u = requireUser(c, m.user_name);
          return {
            Path: u.path,
            UserName: u.name,
            UserId: u.id,
            Arn: userResource(c, u.name),
            CreateDate: u.create_date,
          };
        }),
      };
    },
  },
  DeleteGroup: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const has = (table: string): boolean =>
        (c.store.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM ${table} WHERE group_name = ?`,
          g.name,
        )?.n ?? 0) > 0;
      if (has('group_members')) {
        throw new CloudError(
          'DeleteConflict',
          'Cannot delete entity, must remove users from group first.',
        );
      }
      if (has('group_policies')) {
        throw new CloudError('DeleteConflict', 'Cannot delete entity, must delete policies first.');
      }
      if (has('group_attached')) {
        throw new CloudError(
          'DeleteConflict',
          'Cannot delete entity, must detach all policies first.',
        );
      }
      c.store.run('DELETE FROM groups WHERE name = ?', g.name);
      return null;
    },
  },
  ListGroups: {
    resource: (c) => `arn:aws:iam::${c.account}:group/`,
    run: (c) => {
      const prefix = c.params.get('PathPrefix') ?? '/';
      const groups = c.store.all<GroupRow>('SELECT * FROM groups ORDER BY name');
      return listResult(
        c.params,
        'Groups',
        groups.filter((g) => g.path.startsWith(prefix)),
        (g) => presentGroup(c, g),
      );
    },
  },
  AddUserToGroup: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const u = requireUser(c, c.params.required('UserName'));
      c.store.run(
        'INSERT OR IGNORE INTO group_members (group_name, user_name) VALUES (?, ?)',
        g.name,
        u.name,
      );
      return null;
    },
  },
  RemoveUserFromGroup: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const u = requireUser(c, c.params.required('UserName'));
      const changed = c.store.run(
        'DELETE FROM group_members WHERE group_name = ? AND user_name = ?',
        g.name,
        u.name,
      );
      if (changed === 0) {
        throw new CloudError(
          'NoSuchEntity',
          `The user with name ${u.name} cannot be found in group ${g.name}.`,
        );
      }
      return null;
    },
  },
  ListGroupsForUser: {
    resource: (c) => userResource(c, c.params.required('UserName')),
    run: (c) => {
      const u = requireUser(c, c.params.required('UserName'));
      const groups = c.store.all<GroupRow>(
        `SELECT g.* FROM groups g JOIN group_members m ON m.group_name = g.name
         WHERE m.user_name = ? ORDER BY g.name`,
        u.name,
      );
      return listResult(c.params, 'Groups', groups, (g) => presentGroup(c, g));
    },
  },
  AttachGroupPolicy: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const policyArn = c.params.required('PolicyArn');
      requireAttachable(c, policyArn);
      const n =
        c.store.get<{ n: number }>(
          'SELECT COUNT(*) AS n FROM group_attached WHERE group_name = ? AND arn <> ?',
          g.name,
          policyArn,
        )?.n ?? 0;
      if (n >= MAX_ATTACHED) {
        throw new CloudError(
          'LimitExceeded',
          `Cannot exceed quota for PoliciesPerGroup: ${MAX_ATTACHED}`,
        );
      }
      c.store.run(
        'INSERT OR IGNORE INTO group_attached (group_name, arn) VALUES (?, ?)',
        g.name,
        policyArn,
      );
      return null;
    },
  },
  DetachGroupPolicy: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const policyArn = c.params.required('PolicyArn');
      if (
        c.store.run(
          'DELETE FROM group_attached WHERE group_name = ? AND arn = ?',
          g.name,
          policyArn,
        ) === 0
      ) {
        throw new CloudError('NoSuchEntity', `Policy ${policyArn} was not found.`);
      }
      return null;
    },
  },
  ListAttachedGroupPolicies: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const rows = c.store.all<{ arn: string }>(
        'SELECT arn FROM group_attached WHERE group_name = ? ORDER BY arn',
        g.name,
      );
      return listResult(c.params, 'AttachedPolicies', rows, (r) => ({
        PolicyName: r.arn.slice(r.arn.lastIndexOf('/') + 1),
        PolicyArn: r.arn,
      }));
    },
  },
  PutGroupPolicy: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const name = checkName(c.params.required('PolicyName'), 'policyName', 128);
      const doc = c.params.required('PolicyDocument');
      parsePolicy(doc);
      c.store.run(
        'INSERT OR REPLACE INTO group_policies (group_name, name, document) VALUES (?, ?, ?)',
        g.name,
        name,
        doc,
      );
      return null;
    },
  },
  GetGroupPolicy: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const name = c.params.required('PolicyName');
      const row = c.store.get<{ name: string; document: string }>(
        'SELECT name, document FROM group_policies WHERE group_name = ? AND name = ?',
        g.name,
        name,
      );
      if (!row) {
        throw new CloudError('NoSuchEntity', `The group policy with name ${name} cannot be found.`);
      }
      return {
        GroupName: g.name,
        PolicyName: row.name,
        PolicyDocument: encodeURIComponent(row.document),
      };
    },
  },
  DeleteGroupPolicy: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const name = c.params.required('PolicyName');
      if (
        c.store.run(
          'DELETE FROM group_policies WHERE group_name = ? AND name = ?',
          g.name,
          name,
        ) === 0
      ) {
        throw new CloudError('NoSuchEntity', `The group policy with name ${name} cannot be found.`);
      }
      return null;
    },
  },
  ListGroupPolicies: {
    resource: groupResource,
    run: (c) => {
      const g = requireGroup(c, named(c));
      const rows = c.store.all<{ name: string }>(
        'SELECT name FROM group_policies WHERE group_name = ? ORDER BY name',
        g.name,
      );
      return listResult(c.params, 'PolicyNames', rows, (r) => r.name);
    },
  },
};
