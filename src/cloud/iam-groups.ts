import type { Action } from './context.js';
import { mint, presentGroup, stamp } from './context.js';
import { CloudError } from './errors.js';
import {
  DELETE_CONFLICT,
  listResult,
  listUnderPath,
  pathedEntity,
  requireUser,
  userResource,
} from './iam-common.js';
import { principalPolicyActions } from './iam-principal-policies.js';
import { checkPath } from './params.js';
import type { GroupRow } from './store.js';

const group = pathedEntity<GroupRow>({
  kind: 'group',
  param: 'GroupName',
  max: 128,
  find: (c, name) => c.store.group(name),
});
const { named, require: requireGroup, resource: groupResource } = group;

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
  DeleteGroup: group.deleteAction([
    ['group_members', DELETE_CONFLICT.members],
    ['group_policies', DELETE_CONFLICT.inlinePolicies],
    ['group_attached', DELETE_CONFLICT.attachedPolicies],
  ]),
  ListGroups: {
    resource: (c) => `arn:aws:iam::${c.account}:group/`,
    run: (c) => listUnderPath<GroupRow>(c, 'groups', 'Groups', (g) => presentGroup(c, g)),
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
  ...principalPolicyActions({
    kind: 'Group',
    resource: groupResource,
    require: (c) => requireGroup(c, named(c)),
  }),
};
