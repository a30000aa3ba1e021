import type { Action, ActionContext } from './context.js';
import { CloudError } from './errors.js';
import { listResult, MAX_ATTACHED, requireAttachable } from './iam-common.js';
import { checkName } from './params.js';
import { parsePolicy } from './policy.js';
import type { XmlNode } from './xml.js';

/** A kind of IAM principal that holds managed (attached) and inline policies. */
export interface Principal {
  /** `User`, `Group` or `Role`: the word in the action names and messages. */
  readonly kind: 'User' | 'Group' | 'Role';
  /** The ARN the caller's policies are checked against. */
  readonly resource: (c: ActionContext) => string;
  /** The principal the request names, or NoSuchEntity. */
  readonly require: (c: ActionContext) => { readonly name: string };
}

/**
 * The seven policy actions every principal kind has, over its `<kind>_attached` and
 * `<kind>_policies` tables: Attach/Detach/ListAttached, and Put/Get/Delete/List for inline ones.
 */
export function principalPolicyActions(p: Principal): Record<string, Action> {
  const k = p.kind;
  const lower = k.toLowerCase();
  const attached = `${lower}_attached`;
  const inline = `${lower}_policies`;
  const key = `${lower}_name`;
  const missingInline = (name: string) =>
    new CloudError('NoSuchEntity', `The ${lower} policy with name ${name} cannot be found.`);
  /** An action on the principal the request names, authorised against its ARN. */
  const on = (run: (c: ActionContext, name: string) => XmlNode | null): Action => ({
    resource: p.resource,
    run: (c) => run(c, p.require(c).name),
  });
  /** Deletes the principal's row whose `column` is `value`, or throws `missing`. */
  const remove = (
    c: ActionContext,
    table: string,
    name: string,
    [column, value]: readonly [string, string],
    missing: CloudError,
  ): null => {
    const changed = c.store.run(
      `DELETE FROM ${table} WHERE ${key} = ? AND ${column} = ?`,
      name,
      value,
    );
    if (changed === 0) throw missing;
    return null;
  };
  return {
    [`Attach${k}Policy`]: on((c, name) => {
      const policyArn = c.params.required('PolicyArn');
      requireAttachable(c, policyArn);
      const n =
        c.store.get<{ n: number }>(
          `SELECT COUNT(*) AS n FROM ${attached} WHERE ${key} = ? AND arn <> ?`,
          name,
          policyArn,
        )?.n ?? 0;
      if (n >= MAX_ATTACHED) {
        throw new CloudError(
          'LimitExceeded',
          `Cannot exceed quota for PoliciesPer${k}: ${MAX_ATTACHED}`,
        );
      }
      c.store.run(`INSERT OR IGNORE INTO ${attached} (${key}, arn) VALUES (?, ?)`, name, policyArn);
      return null;
    }),
    [`Detach${k}Policy`]: on((c, name) => {
      const policyArn = c.params.required('PolicyArn');
      return remove(
        c,
        attached,
        name,
        ['arn', policyArn],
        new CloudError('NoSuchEntity', `Policy ${policyArn} was not found.`),
      );
    }),
    [`ListAttached${k}Policies`]: on((c, name) => {
      const rows = c.store.all<{ arn: string }>(
        `SELECT arn FROM ${attached} WHERE ${key} = ? ORDER BY arn`,
        name,
      );
      return listResult(c.params, 'AttachedPolicies', rows, (r) => ({
        PolicyName: r.arn.slice(r.arn.lastIndexOf('/') + 1),
        PolicyArn: r.arn,
      }));
    }),
    [`Put${k}Policy`]: on((c, name) => {
      const policy = checkName(c.params.required('PolicyName'), 'policyName', 128);
      const doc = c.params.required('PolicyDocument');
      parsePolicy(doc);
      c.store.run(
        `INSERT OR REPLACE INTO ${inline} (${key}, name, document) VALUES (?, ?, ?)`,
        name,
        policy,
        doc,
      );
      return null;
    }),
    [`Get${k}Policy`]: on((c, name) => {
      const policy = c.params.required('PolicyName');
      const row = c.store.get<{ name: string; document: string }>(
        `SELECT name, document FROM ${inline} WHERE ${key} = ? AND name = ?`,
        name,
        policy,
      );
      if (!row) throw missingInline(policy);
      return {
        [`${k}Name`]: name,
        PolicyName: row.name,
        PolicyDocument: encodeURIComponent(row.document),
      };
    }),
    [`Delete${k}Policy`]: on((c, name) => {
      const policy = c.params.required('PolicyName');
      return remove(c, inline, name, ['name', policy], missingInline(policy));
    }),
    [`List${k}Policies`]: on((c, name) => {
      const rows = c.store.all<{ name: string }>(
        `SELECT name FROM ${inline} WHERE ${key} = ? ORDER BY name`,
        name,
      );
      return listResult(c.params, 'PolicyNames', rows, (r) => r.name);
    }),
  };
}
