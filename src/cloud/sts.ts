import type { Action, ActionContext, Principal } from './context.js';
import { arn, mint, stamp } from './context.js';
import { CloudError, validationError } from './errors.js';
import { totpMatches } from './mfa.js';
import { managedDocument } from './permissions.js';
import { evaluateTrust, parsePolicy } from './policy.js';
import type { MfaRow, SessionRow } from './store.js';

/** AWS's limit on a session policy's plain-text size. */
const MAX_SESSION_POLICY = 2048;

/** Role chaining caps a session at one hour. */
const CHAINED_MAX = 3600;

/**
 * A session or federated user name (`RoleSessionName`, `Name`): 2 to `max` characters of
 * `[\w+=,.@-]`, refused as STS words it (the field in camel case, the pattern with `*`).
 */
function stsName(c: ActionContext, param: string, max: number): string {
  const value = c.params.required(param);
  const field = param[0]!.toLowerCase() + param.slice(1);
  if (value.length < 2 || value.length > max) {
    throw validationError(
      field,
      value,
      `Member must have length ${value.length < 2 ? 'greater than or equal to 2' : `less than or equal to ${max}`}`,
    );
  }
  if (!/^[\w+=,.@-]*$/.test(value)) {
    throw validationError(
      field,
      value,
      'Member must satisfy regular expression pattern: [\\w+=,.@-]*',
    );
  }
  return value;
}

function sessionPolicy(c: ActionContext): {
  policy: string | null;
  arns: string[];
  packed?: number;
} {
  const policy = c.params.get('Policy') || null;
  if (policy !== null) {
    if (policy.length > MAX_SESSION_POLICY) {
      throw validationError(
        'policy',
        policy.slice(0, 20) + '…',
        `Member must have length less than or equal to ${MAX_SESSION_POLICY}`,
      );
    }
    parsePolicy(policy);
  }
  const arns = c.params.list('PolicyArns', '.arn');
  if (arns.length > 10) {
    throw validationError('policyArns', null, 'Member must have length less than or equal to 10');
  }
  for (const a of arns) {
    if (managedDocument(c.store, a) === undefined) {
      throw new CloudError('NoSuchEntity', `Policy ${a} does not exist or is not attachable.`);
    }
  }
  const size = (policy?.length ?? 0) + arns.join('').length;
  return {
    policy,
    arns,
    packed:
      policy || arns.length > 0
        ? Math.max(1, Math.ceil((size / MAX_SESSION_POLICY) * 100))
        : undefined,
  };
}

/** Stores temporary credentials and returns their wire shape. */
function issue(
  c: ActionContext,
  seconds: number,
  who: Pick<SessionRow, 'kind' | 'arn' | 'user_id' | 'user_name' | 'role_name'>,
  policy: string | null,
  policyArns: string[],
) {
  const secret = mint.secretKey(c.ids);
  const token = mint.sessionToken(c.ids);
  const row: SessionRow = {
    ...who,
    access_key_id: mint.accessKeyId(c.ids, true),
    secret: c.store.seal(secret),
    token_hmac: c.store.tokenHmac(token),
    expiration: stamp(new Date(c.now.getTime() + seconds * 1000)),
    policy,
    policy_arns: JSON.stringify(policyArns),
    create_date: stamp(c.now),
  };
  // Temporary credentials a day past expiry can only ever answer ExpiredToken; drop them.
  c.store.run(
    'DELETE FROM sessions WHERE expiration < ?',
    stamp(new Date(c.now.getTime() - 86_400_000)),
  );
  c.store.run(
    `INSERT INTO sessions (access_key_id, secret, token_hmac, expiration, kind, arn, user_id, user_name,
     role_name, policy, policy_arns, create_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    row.access_key_id,
    row.secret,
    row.token_hmac,
    row.expiration,
    row.kind,
    row.arn,
    row.user_id,
    row.user_name,
    row.role_name,
    row.policy,
    row.policy_arns,
    row.create_date,
  );
  return {
    AccessKeyId: row.access_key_id,
    SecretAccessKey: secret,
    SessionToken: token,
    Expiration: row.expiration,
  };
}

/** The principal forms a trust policy's `AWS` principals may name to match this caller. */
function trustForms(c: ActionContext, p: Principal): string[] {
  const forms = [`AWS:${c.account}`, `AWS:arn:aws:iam::${c.account}:root`, `AWS:${p.arn}`];
  if (p.kind === 'assumed-role' && p.roleName) {
    const r = c.store.role(p.roleName);
    if (r) forms.push(`AWS:${arn.role(c.account, r.path, r.name)}`);
  }
  return forms;
}

function requireLongTerm(c: ActionContext, action: string): string {
  if (c.principal.kind !== 'user' || !c.principal.userName) {
    throw new CloudError('AccessDenied', `Cannot call ${action} with session credentials`);
  }
  return c.principal.userName;
}

const roleArnName = (roleArn: string): string => {
  const m = /^arn:aws:iam::\d{12}:role\/(?:.*\/)?([\w+=,.@-]+)$/.exec(roleArn);
  if (!m?.[1]) throw validationError('roleArn', roleArn, 'Member must be a role ARN');
  return m[1];
};

/** GetCallerIdentity, AssumeRole, GetFederationToken and GetSessionToken. */
export const stsActions: Record<string, Action> = {
  GetCallerIdentity: {
    // Like AWS: every valid credential may ask who it is, whatever its policies say.
    resource: () => null,
    run: (c) => ({ Arn: c.principal.arn, UserId: c.principal.userId, Account: c.account }),
  },
  AssumeRole: {
    resource: (c) => c.params.required('RoleArn'),
    run: (c) => {
      const roleArn = c.params.required('RoleArn');
      const sessionName = stsName(c, 'RoleSessionName', 64);
      const seconds = c.params.int('DurationSeconds', 900, 43200) ?? 3600;
      const externalId = c.params.get('ExternalId');
      if (externalId !== undefined && (externalId.length < 2 || externalId.length > 1224)) {
        throw validationError(
          'externalId',
          externalId,
          'Member must have length between 2 and 1224',
        );
      }
      const tags = c.params.tags();
      if (tags.length > 50)
        throw validationError('tags', null, 'Member must have length less than or equal to 50');
      const denied = new CloudError(
        'AccessDenied',
        `User: ${c.principal.arn} is not authorized to perform: sts:AssumeRole on resource: ${roleArn}`,
      );
      // AWS answers a missing role the same way as a refused one, so callers learn nothing.
      const role = c.store.role(roleArnName(roleArn));
      if (!role || arn.role(c.account, role.path, role.name) !== roleArn) throw denied;
      const trust = evaluateTrust(
        parsePolicy(role.trust, 'trust'),
        'sts:AssumeRole',
        trustForms(c, c.principal),
        {
          ...(externalId === undefined ? {} : { 'sts:ExternalId': externalId }),
        },
      );
      if (trust !== 'allow') throw denied;
      if (c.principal.kind === 'assumed-role' && seconds > CHAINED_MAX) {
        throw validationError(
          'durationSeconds',
          String(seconds),
          'The requested DurationSeconds exceeds the 1 hour session limit for roles assumed by role chaining.',
        );
      }
      if (seconds > role.max_session) {
        throw validationError(
          'durationSeconds',
          String(seconds),
          'The requested DurationSeconds exceeds the MaxSessionDuration set for this role.',
        );
      }
      const { policy, arns, packed } = sessionPolicy(c);
      const sessionArn = `arn:aws:sts::${c.account}:assumed-role/${role.name}/${sessionName}`;
      const userId = `${role.id}:${sessionName}`;
      const credentials = issue(
        c,
        seconds,
        {
          kind: 'assumed-role',
          arn: sessionArn,
          user_id: userId,
          user_name: null,
          role_name: role.name,
        },
        policy,
        arns,
      );
      return {
        Credentials: credentials,
        AssumedRoleUser: { AssumedRoleId: userId, Arn: sessionArn },
        PackedPolicySize: packed,
        SourceIdentity: c.params.get('SourceIdentity'),
      };
    },
  },
  GetFederationToken: {
    // The session-credential refusal comes before any policy check, as in AWS.
    resource: (c) => {
      requireLongTerm(c, 'GetFederationToken');
      return `arn:aws:sts::${c.account}:federated-user/${c.params.required('Name')}`;
    },
    run: (c) => {
      const userName = requireLongTerm(c, 'GetFederationToken');
      const name = stsName(c, 'Name', 32);
      const seconds = c.params.int('DurationSeconds', 900, 129600) ?? 43200;
      const { policy, arns, packed } = sessionPolicy(c);
      const fedArn = `arn:aws:sts::${c.account}:federated-user/${name}`;
      const userId = `${c.account}:${name}`;
      const credentials = issue(
        c,
        seconds,
        {
          kind: 'federated-user',
          arn: fedArn,
          user_id: userId,
          user_name: userName,
          role_name: null,
        },
        policy,
        arns,
      );
      return {
        Credentials: credentials,
        FederatedUser: { FederatedUserId: userId, Arn: fedArn },
        PackedPolicySize: packed,
      };
    },
  },
  GetSessionToken: {
    // GetSessionToken needs no permission in AWS either; only long-term keys may call it.
    resource: () => null,
    run: (c) => {
      const userName = requireLongTerm(c, 'GetSessionToken');
      const seconds = c.params.int('DurationSeconds', 900, 129600) ?? 43200;
      const serial = c.params.get('SerialNumber');
      const code = c.params.get('TokenCode');
      if (code !== undefined && !/^\d{6}$/.test(code)) {
        throw validationError(
          'tokenCode',
          code,
          'Member must satisfy regular expression pattern: [\\d]*',
        );
      }
      if (serial) {
        const device = c.store.get<MfaRow>(
          'SELECT * FROM mfa_devices WHERE serial = ? AND user_name = ?',
          serial,
          userName,
        );
        if (!device || code === undefined) {
          throw new CloudError(
            'AccessDenied',
            'MultiFactorAuthentication failed, unable to validate MFA code.',
          );
        }
        if (!totpMatches(c.store.unseal(device.seed), c.now, code)) {
          throw new CloudError(
            'AccessDenied',
            'MultiFactorAuthentication failed with invalid MFA one time pass code.',
          );
        }
      }
      const credentials = issue(
        c,
        seconds,
        {
          kind: 'session',
          arn: c.principal.arn,
          user_id: c.principal.userId,
          user_name: userName,
          role_name: null,
        },
        null,
        [],
      );
      return { Credentials: credentials };
    },
  },
};
