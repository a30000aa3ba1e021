import type { Principal } from './context.js';
import { CloudError } from './errors.js';
import { evaluate, parsePolicy } from './policy.js';
import type { ConditionContext, Decision, Policy } from './policy.js';
import type { CloudStore } from './store.js';

const allow = (action: string | string[]): string =>
  JSON.stringify({
    Version: '2012-10-17',
    Statement: [{ Effect: 'Allow', Action: action, Resource: '*' }],
  });

/** The AWS managed policies the emulator knows; attaching any other `aws` policy is NoSuchEntity. */
export const AWS_MANAGED: Readonly<Record<string, string>> = {
  AdministratorAccess: allow('*'),
  IAMFullAccess: allow('iam:*'),
  IAMReadOnlyAccess: allow(['iam:Get*', 'iam:List*', 'iam:GenerateCredentialReport']),
  ReadOnlyAccess: allow(['*:Get*', '*:List*', '*:Describe*']),
};

/** The document of a managed policy (customer or AWS managed), or undefined. */
export function managedDocument(store: CloudStore, policyArn: string): string | undefined {
  const m = /^arn:aws:iam::aws:policy\/(.+)$/.exec(policyArn);
  if (m) return AWS_MANAGED[m[1] ?? ''];
  return store.policy(policyArn)?.document;
}

const parseAll = (docs: readonly string[]): Policy[] => docs.map((d) => parsePolicy(d));

/** Every identity policy of a user: inline, attached, and those of its groups. */
export function userPolicies(store: CloudStore, userName: string): Policy[] {
  const inline = store.all<{ document: string }>(
    'SELECT document FROM user_policies WHERE user_name = ?',
    userName,
  );
  const groupInline = store.all<{ document: string }>(
    `SELECT gp.document FROM group_policies gp JOIN group_members m ON m.group_name = gp.group_name
     WHERE m.user_name = ?`,
    userName,
  );
  const arns = store.all<{ arn: string }>(
    `SELECT arn FROM user_attached WHERE user_name = ?
     UNION SELECT ga.arn FROM group_attached ga JOIN group_members m ON m.group_name = ga.group_name
     WHERE m.user_name = ?`,
    userName,
    userName,
  );
  return parseAll([
    ...inline.map((r) => r.document),
    ...groupInline.map((r) => r.document),
    ...arns.flatMap((r) => managedDocument(store, r.arn) ?? []),
  ]);
}

/** Every identity policy of a role: inline and attached. */
export function rolePolicies(store: CloudStore, roleName: string): Policy[] {
  const inline = store.all<{ document: string }>(
    'SELECT document FROM role_policies WHERE role_name = ?',
    roleName,
  );
  const arns = store.all<{ arn: string }>(
    'SELECT arn FROM role_attached WHERE role_name = ?',
    roleName,
  );
  return parseAll([
    ...inline.map((r) => r.document),
    ...arns.flatMap((r) => managedDocument(store, r.arn) ?? []),
  ]);
}

/** A user's permissions boundary as a policy set, or null when it has none. */
function boundary(store: CloudStore, userName: string): Policy[] | null {
  const arnText = store.user(userName)?.boundary_arn;
  if (!arnText) return null;
  const doc = managedDocument(store, arnText);
  // A boundary whose policy was deleted allows nothing, which is what AWS does too.
  return doc === undefined ? [] : parseAll([doc]);
}

/**
 * The policy sets that must all allow an action for this principal. A request is allowed only
 * when every set allows it and none denies it explicitly (identity ∩ boundary ∩ session).
 */
export function policySets(store: CloudStore, p: Principal): Policy[][] {
  const sets: Policy[][] = [];
  if (p.kind === 'assumed-role') {
    sets.push(p.roleName ? rolePolicies(store, p.roleName) : []);
  } else if (p.userName) {
    sets.push(userPolicies(store, p.userName));
    const b = boundary(store, p.userName);
    if (b) sets.push(b);
  }
  if (p.sessionPolicies !== null) sets.push(p.sessionPolicies);
  // Federated users get only what the session policy grants; without one they get nothing.
  if (p.kind === 'federated-user' && p.sessionPolicies === null) sets.push([]);
  return sets;
}

/** Throws AccessDenied unless the principal may perform `action` on `resource`. */
export function authorize(
  store: CloudStore,
  p: Principal,
  action: string,
  resource: string,
  ctx: ConditionContext = {},
): void {
  const decisions: Decision[] = policySets(store, p).map((set) =>
    evaluate(set, action, resource, ctx),
  );
  if (decisions.length > 0 && decisions.every((d) => d === 'allow')) return;
  const explicit = decisions.includes('deny');
  throw new CloudError(
    'AccessDenied',
    `User: ${p.arn} is not authorized to perform: ${action} on resource: ${resource} ` +
      (explicit
        ? 'with an explicit deny in an identity-based policy'
        : `because no identity-based policy allows the ${action} action`),
  );
}
