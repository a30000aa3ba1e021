import { CloudError } from './errors.js';

/** One statement of a policy, normalised: lists everywhere, the effect as given. */
export interface Statement {
  effect: 'Allow' | 'Deny';
  actions?: string[];
  notActions?: string[];
  resources?: string[];
  notResources?: string[];
  principals?: string[];
  condition?: Record<string, Record<string, string[]>>;
}

/** A parsed policy document. */
export interface Policy {
  statements: Statement[];
}

/** The outcome of evaluating policies: an explicit deny beats an allow, which beats nothing. */
export type Decision = 'allow' | 'deny' | 'implicit';

const malformed = (why: string): CloudError => new CloudError('MalformedPolicyDocument', why);

function stringList(v: unknown, what: string): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.every((x): x is string => typeof x === 'string')) return v;
  throw malformed(`Syntax errors in policy: ${what} must be a string or a list of strings.`);
}

function principalList(v: unknown): string[] {
  if (v === '*') return ['*'];
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw malformed('Invalid principal in policy.');
  }
  return Object.entries(v as Record<string, unknown>).flatMap(([kind, ids]) =>
    stringList(ids, 'Principal').map((id) => `${kind}:${id}`),
  );
}

function conditionBlock(v: unknown): Statement['condition'] {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw malformed('Syntax errors in policy: Condition must be an object.');
  }
  const out: Record<string, Record<string, string[]>> = {};
  for (const [op, keys] of Object.entries(v as Record<string, unknown>)) {
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) {
      throw malformed(`Syntax errors in policy: Condition operator ${op} must map keys to values.`);
    }
    out[op] = Object.fromEntries(
      Object.entries(keys as Record<string, unknown>).map(([k, vals]) => [
        k.toLowerCase(),
        stringList(vals, 'Condition value'),
      ]),
    );
  }
  return out;
}

/**
 * Parses and checks a policy document the way IAM does at write time. `trust` documents (a
 * role's assume-role policy) need a `Principal`; identity policies must not have one.
 */
export function parsePolicy(text: string, kind: 'identity' | 'trust' = 'identity'): Policy {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw malformed('Syntax errors in policy.');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw malformed('Syntax errors in policy.');
  }
  const { Version, Statement } = doc as Record<string, unknown>;
  if (Version !== undefined && Version !== '2012-10-17' && Version !== '2008-10-17') {
    throw malformed('The policy failed legacy parsing');
  }
  if (Statement === undefined) throw malformed('Syntax errors in policy: Statement is missing.');
  const raw: unknown[] = Array.isArray(Statement) ? Statement : [Statement];
  if (raw.length === 0) throw malformed('Syntax errors in policy: Statement is empty.');
  const statements = raw.map((s): Statement => {
    if (typeof s !== 'object' || s === null || Array.isArray(s)) {
      throw malformed('Syntax errors in policy.');
    }
    const r = s as Record<string, unknown>;
    if (r.Effect !== 'Allow' && r.Effect !== 'Deny') {
      throw malformed('Syntax errors in policy: Effect must be "Allow" or "Deny".');
    }
    if ((r.Action === undefined) === (r.NotAction === undefined)) {
      throw malformed('Policy statement must contain actions.');
    }
    const st: Statement = { effect: r.Effect };
    if (r.Action !== undefined) st.actions = stringList(r.Action, 'Action');
    if (r.NotAction !== undefined) st.notActions = stringList(r.NotAction, 'NotAction');
    if (r.Resource !== undefined) st.resources = stringList(r.Resource, 'Resource');
    if (r.NotResource !== undefined) st.notResources = stringList(r.NotResource, 'NotResource');
    if (r.Condition !== undefined) st.condition = conditionBlock(r.Condition);
    if (kind === 'trust') {
      if (r.Principal === undefined)
        throw malformed('AssumeRolepolicy contained an invalid principal.');
      st.principals = principalList(r.Principal);
    } else {
      if (r.Principal !== undefined || r.NotPrincipal !== undefined) {
        throw malformed('Policy document should not specify a principal.');
      }
      if (st.resources === undefined && st.notResources === undefined) {
        throw malformed('Policy statement must contain resources.');
      }
    }
    return st;
  });
  return { statements };
}

/** Glob match with `*` and `?`, as IAM matches actions and resources. */
export function wildcardMatch(pattern: string, value: string, ignoreCase = false): boolean {
  const re = pattern
    .split('')
    .map((c) => (c === '*' ? '.*' : c === '?' ? '.' : c.replace(/[.+^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${re}$`, ignoreCase ? 'is' : 's').test(value);
}

const anyMatch = (patterns: readonly string[], value: string, ignoreCase: boolean): boolean =>
  patterns.some((p) => wildcardMatch(p, value, ignoreCase));

/** Condition keys known about the request; anything else is absent. */
export type ConditionContext = Readonly<Record<string, string>>;

/**
 * true / false, or 'unknown' for an operator the emulator does not implement. Unknown
 * conditions fail closed: an Allow with one does not apply, a Deny with one does.
 */
function conditionHolds(cond: Statement['condition'], ctx: ConditionContext): boolean | 'unknown' {
  if (!cond) return true;
  const lowered = Object.fromEntries(Object.entries(ctx).map(([k, v]) => [k.toLowerCase(), v]));
  for (const [op, keys] of Object.entries(cond)) {
    for (const [key, values] of Object.entries(keys)) {
      const actual = lowered[key];
      switch (op) {
        case 'StringEquals':
          if (actual === undefined || !values.includes(actual)) return false;
          break;
        case 'StringNotEquals':
          if (actual !== undefined && values.includes(actual)) return false;
          break;
        case 'StringLike':
          if (actual === undefined || !anyMatch(values, actual, false)) return false;
          break;
        case 'Bool':
          if (actual === undefined || !values.includes(actual)) return false;
          break;
        default:
          return 'unknown';
      }
    }
  }
  return true;
}

function statementApplies(
  st: Statement,
  action: string,
  resource: string,
  ctx: ConditionContext,
): boolean {
  if (st.actions && !anyMatch(st.actions, action, true)) return false;
  if (st.notActions && anyMatch(st.notActions, action, true)) return false;
  if (st.resources && !anyMatch(st.resources, resource, false)) return false;
  if (st.notResources && anyMatch(st.notResources, resource, false)) return false;
  const holds = conditionHolds(st.condition, ctx);
  return st.effect === 'Allow' ? holds === true : holds !== false;
}

/** Evaluates one set of policies for an action on a resource. */
export function evaluate(
  policies: readonly Policy[],
  action: string,
  resource: string,
  ctx: ConditionContext = {},
): Decision {
  let allowed = false;
  for (const p of policies) {
    for (const st of p.statements) {
      if (!statementApplies(st, action, resource, ctx)) continue;
      if (st.effect === 'Deny') return 'deny';
      allowed = true;
    }
  }
  return allowed ? 'allow' : 'implicit';
}

/**
 * Evaluates a trust policy for a caller wanting `action` (e.g. `sts:AssumeRole`). `principals`
 * are the forms the caller matches: `AWS:*`, `AWS:<account>`, `AWS:arn:…:root`, its ARNs.
 */
export function evaluateTrust(
  policy: Policy,
  action: string,
  principals: readonly string[],
  ctx: ConditionContext,
): Decision {
  let allowed = false;
  for (const st of policy.statements) {
    const who = st.principals ?? [];
    if (!who.includes('*') && !who.some((p) => principals.includes(p))) continue;
    if (!statementApplies({ ...st, resources: undefined }, action, '*', ctx)) continue;
    if (st.effect === 'Deny') return 'deny';
    allowed = true;
  }
  return allowed ? 'allow' : 'implicit';
}
