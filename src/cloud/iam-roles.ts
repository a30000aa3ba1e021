import type { Action, ActionContext } from './context.js';
import { arn, mint, presentRole, stamp } from './context.js';
import { CloudError, validationError } from './errors.js';
import { DELETE_CONFLICT, listResult, pathedEntity } from './iam-common.js';
import { principalPolicyActions } from './iam-principal-policies.js';
import { checkName, checkPath } from './params.js';
import { parsePolicy } from './policy.js';
import { AWS_MANAGED, managedDocument } from './permissions.js';
import type { PolicyRow, RoleRow } from './store.js';

const role = pathedEntity<RoleRow>({
  kind: 'role',
  param: 'RoleName',
  max: 64,
  find: (c, name) => c.store.role(name),
});
const { named, resource: roleResource } = role;

/** The role named by `RoleName`, or NoSuchEntity. */
export const requireRole = role.require;

const attachments = (c: ActionContext, policyArn: string): number =>
  c.store.get<{ n: number }>(
    `SELECT (SELECT COUNT(*) FROM user_attached WHERE arn = ?) + (SELECT COUNT(*) FROM group_attached
     WHERE arn = ?) + (SELECT COUNT(*) FROM role_attached WHERE arn = ?) AS n`,
    policyArn,
    policyArn,
    policyArn,
  )?.n ?? 0;

const presentPolicy = (c: ActionContext, p: PolicyRow) => ({
  PolicyName: p.name,
  PolicyId: p.id,
  Arn: p.arn,
  Path: p.path,
  DefaultVersionId: 'v1',
  AttachmentCount: attachments(c, p.arn),
  PermissionsBoundaryUsageCount:
    c.store.get<{ n: number }>('SELECT COUNT(*) AS n FROM users WHERE boundary_arn = ?', p.arn)
      ?.n ?? 0,
  IsAttachable: true,
  Description: p.description ?? undefined,
  CreateDate: p.create_date,
  UpdateDate: p.create_date,
});

function requirePolicy(c: ActionContext): PolicyRow {
  const policyArn = c.params.required('PolicyArn');
  const p = c.store.policy(policyArn);
  if (!p) throw new CloudError('NoSuchEntity', `Policy ${policyArn} was not found.`);
  return p;
}

/** Roles, their policies, and customer managed policies. */
export const roleActions: Record<string, Action> = {
  CreateRole: {
    resource: roleResource,
    run: (c) => {
      const name = named(c);
      // Parameter constraints are checked before the document, as IAM does.
      const maxSession = c.params.int('MaxSessionDuration', 3600, 43200) ?? 3600;
      const trust = c.params.required('AssumeRolePolicyDocument');
      parsePolicy(trust, 'trust');
      if (c.store.role(name)) {
        throw new CloudError('EntityAlreadyExists', `Role with name ${name} already exists.`);
      }
      c.store.run(
        `INSERT INTO roles (name, id, path, create_date, trust, max_session, description)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        name,
        mint.uniqueId(c.ids, 'AROA'),
        checkPath(c.params.get('Path')),
        stamp(c.now),
        trust,
        maxSession,
        c.params.get('Description') ?? null,
      );
      return { Role: presentRole(c, requireRole(c, name)) };
    },
  },
  GetRole: {
    resource: roleResource,
    run: (c) => ({ Role: presentRole(c, requireRole(c, named(c))) }),
  },
  ListRoles: {
    resource: (c) => `arn:aws:iam::${c.account}:role/`,
    run: (c) => {
      const roles = c.store.all<RoleRow>('SELECT * FROM roles ORDER BY name');
      return listResult(c.params, 'Roles', roles, (r) => presentRole(c, r));
    },
  },
  DeleteRole: role.deleteAction([
    ['role_policies', DELETE_CONFLICT.inlinePolicies],
    ['role_attached', DELETE_CONFLICT.attachedPolicies],
  ]),
  ...principalPolicyActions({
    kind: 'Role',
    resource: roleResource,
    require: (c) => requireRole(c, named(c)),
  }),
  CreatePolicy: {
    resource: (c) =>
      arn.policy(c.account, checkPath(c.params.get('Path')), c.params.required('PolicyName')),
    run: (c) => {
      const name = checkName(c.params.required('PolicyName'), 'policyName', 128);
      const path = checkPath(c.params.get('Path'));
      const doc = c.params.required('PolicyDocument');
      parsePolicy(doc);
      const policyArn = arn.policy(c.account, path, name);
      if (c.store.policy(policyArn)) {
        throw new CloudError(
          'EntityAlreadyExists',
          `A policy called ${name} already exists. Duplicate names are not allowed.`,
        );
      }
      c.store.run(
        `INSERT INTO policies (arn, name, id, path, document, description, create_date)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
        policyArn,
        name,
        mint.uniqueId(c.ids, 'ANPA'),
        path,
        doc,
        c.params.get('Description') ?? null,
        stamp(c.now),
      );
      const row = c.store.policy(policyArn);
      if (!row) throw new CloudError('InternalFailure', 'policy vanished after insert');
      return { Policy: presentPolicy(c, row) };
    },
  },
  GetPolicy: {
    resource: (c) => c.params.required('PolicyArn'),
    run: (c) => ({ Policy: presentPolicy(c, requirePolicy(c)) }),
  },
  GetPolicyVersion: {
    resource: (c) => c.params.required('PolicyArn'),
    run: (c) => {
      const policyArn = c.params.required('PolicyArn');
      const version = c.params.required('VersionId');
      const doc = managedDocument(c.store, policyArn);
      if (doc === undefined || version !== 'v1') {
        throw new CloudError(
          'NoSuchEntity',
          `Policy ${policyArn} version ${version} does not exist or is not attachable.`,
        );
      }
      const created = c.store.policy(policyArn)?.create_date ?? '2015-02-06T18:39:46.000Z';
      return {
        PolicyVersion: {
          Document: encodeURIComponent(doc),
          VersionId: 'v1',
          IsDefaultVersion: true,
          CreateDate: created,
        },
      };
    },
  },
  ListPolicies: {
    resource: () => '*',
    run: (c) => {
      const scope = c.params.get('Scope') ?? 'All';
      if (scope !== 'All' && scope !== 'AWS' && scope !== 'Local') {
        throw validationError(
          'scope',
          scope,
          'Member must satisfy enum value set: [All, AWS, Local]',
        );
      }
      // AWS managed policies are listed as if created when IAM launched them; they have no owner here.
      const aws: PolicyRow[] = Object.entries(AWS_MANAGED).map(([name, document]) => ({
        arn: `arn:aws:iam::aws:policy/${name}`,
        name,
        id: `ANPA${name
          .toUpperCase()
          .replace(/[^A-Z0-9]/g, '')
          .padEnd(17, 'X')
          .slice(0, 17)}`,
        path: '/',
        document,
        description: null,
        create_date: '2015-02-06T18:39:46.000Z',
      }));
      const local = c.store.all<PolicyRow>('SELECT * FROM policies ORDER BY name');
      const rows = (scope === 'AWS' ? aws : scope === 'Local' ? local : [...aws, ...local])
        .filter((p) => c.params.get('OnlyAttached') !== 'true' || attachments(c, p.arn) > 0)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      return listResult(c.params, 'Policies', rows, (p) => presentPolicy(c, p));
    },
  },
  DeletePolicy: {
    resource: (c) => c.params.required('PolicyArn'),
    run: (c) => {
      const p = requirePolicy(c);
      if (attachments(c, p.arn) > 0) {
        throw new CloudError('DeleteConflict', 'Cannot delete a policy attached to entities.');
      }
      c.store.run('DELETE FROM policies WHERE arn = ?', p.arn);
      return null;
    },
  },
};
