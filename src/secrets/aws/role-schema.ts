import { KeelError, ValidationError } from '../../core/errors.js';
import type { FieldData } from '../fields.js';
import type { ROLE } from './paths.js';

type RoleFields = FieldData<typeof ROLE.fields>;

/** The four ways a role hands out credentials. */
export const CREDENTIAL_TYPES = [
  'iam_user',
  'assumed_role',
  'federation_token',
  'session_token',
] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/** A role as stored in its events and read model. */
export interface RoleEntry {
  credentialTypes: CredentialType[];
  roleArns: string[];
  policyArns: string[];
  /** Compacted JSON, or '' when unset. */
  policyDocument: string;
  iamGroups: string[];
  iamTags: Record<string, string>;
  defaultStsTtl: number;
  maxStsTtl: number;
  sessionTags: Record<string, string>;
  externalId: string;
  userPath: string;
  permissionsBoundaryArn: string;
  mfaSerialNumber: string;
  /** Set for roles written with the legacy `policy`/`arn` parameters: creds/ vs sts/ is enforced. */
  prohibitFlexibleCredPath: boolean;
}

export const emptyRole = (): RoleEntry => ({
  credentialTypes: [],
  roleArns: [],
  policyArns: [],
  policyDocument: '',
  iamGroups: [],
  iamTags: {},
  defaultStsTtl: 0,
  maxStsTtl: 0,
  sessionTags: {},
  externalId: '',
  userPath: '',
  permissionsBoundaryArn: '',
  mfaSerialNumber: '',
  prohibitFlexibleCredPath: false,
});

export const USER_PATH_REGEX = /^\/([\x21-\x7F]{0,510}\/)?$/;
const USER_PATH_REGEX_TEXT = '^\\/([\\x21-\\x7F]{0,510}\\/)?$';

export const LEGACY_WARNING =
  'Detected use of legacy role or policy parameter. Please upgrade to use the new parameters.';

/** Go's multierror text, which the reference then quotes with `%q` inside its 400 message. */
export function multierror(errors: readonly string[]): string {
  const head = errors.length === 1 ? '1 error occurred:' : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join('\n')}\n\n`;
}

/** Parses an ARN the way aws-sdk-go's `arn.Parse` does (six colon-separated sections). */
export function parseArn(arn: string): {
  partition: string;
  service: string;
  region: string;
  account: string;
  resource: string;
} {
  if (!arn.startsWith('arn:')) throw new Error('arn: invalid prefix');
  const parts = arn.split(':');
  if (parts.length < 6) throw new Error('arn: not enough sections');
  return {
    partition: parts[1] as string,
    service: parts[2] as string,
    region: parts[3] as string,
    account: parts[4] as string,
    resource: parts.slice(5).join(':'),
  };
}

function boundaryProblem(arn: string): string | null {
  try {
    const parsed = parseArn(arn);
    if (parsed.service !== 'iam') return `expected a service of iam but got ${parsed.service}`;
    const type = parsed.resource.split('/')[0] ?? '';
    if (type !== 'policy') return `expected a resource type of policy but got ${type}`;
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/** A validated role write: the new entry and any warnings for the 200 response. */
export interface RoleWrite {
  role: RoleEntry;
  warnings: string[];
}

/**
 * Applies a POST roles/:name body to the existing entry (an upsert: absent fields keep their values)
 * and validates the result with the reference's messages. Rules the spec states at write time
 * (role_arns for assumed_role, a policy for iam_user and federation_token) are checked here too.
 */
export function applyRoleWrite(existing: RoleEntry | null, raw: RoleFields): RoleWrite {
  const legacyPolicy = raw.get('policy');
  const legacyArn = raw.get('arn');
  if (legacyPolicy !== undefined || legacyArn !== undefined)
    return legacyWrite(raw, legacyPolicy, legacyArn);

  const role: RoleEntry = existing ? structuredClone(existing) : emptyRole();
  const credentialType = raw.get('credential_type');
  // One type, as written: the reference reads credential_type as a single string, so
  // "iam_user,federation_token" is refused as an unrecognized type rather than split.
  if (credentialType !== undefined) role.credentialTypes = [credentialType as CredentialType];
  const roleArns = raw.get('role_arns');
  if (roleArns) role.roleArns = roleArns;
  const policyArns = raw.get('policy_arns');
  if (policyArns) role.policyArns = policyArns;
  const policyDocument = raw.get('policy_document');
  if (policyDocument !== undefined) role.policyDocument = compactPolicy(policyDocument);
  const groups = raw.get('iam_groups');
  if (groups) role.iamGroups = groups;
  const tags = raw.get('iam_tags');
  if (tags) role.iamTags = tags;
  const defaultTtl = raw.get('default_sts_ttl');
  if (defaultTtl !== undefined) role.defaultStsTtl = defaultTtl;
  const maxTtl = raw.get('max_sts_ttl');
  if (maxTtl !== undefined) role.maxStsTtl = maxTtl;
  const sessionTags = raw.get('session_tags');
  if (sessionTags) role.sessionTags = sessionTags;
  for (const [field, key] of [
    ['external_id', 'externalId'],
    ['user_path', 'userPath'],
    ['permissions_boundary_arn', 'permissionsBoundaryArn'],
    ['mfa_serial_number', 'mfaSerialNumber'],
  ] as const) {
    const v = raw.get(field);
    if (v !== undefined) role[key] = v;
  }
  const errors = validateRole(role);
  if (errors.length) {
    throw new ValidationError(
      `error(s) validating supplied role data: ${JSON.stringify(multierror(errors))}`,
    );
  }
  return { role, warnings: [] };
}

/** A valid document is stored compacted; anything else is the reference's 400. */
function compactPolicy(doc: string): string {
  if (doc.trim() === '') return '';
  try {
    return JSON.stringify(JSON.parse(doc));
  } catch {
    throw new ValidationError(`cannot parse policy document: ${JSON.stringify(doc)}`);
  }
}

/** Every rule of the spec over a complete role, in the reference's check order. */
export function validateRole(role: RoleEntry): string[] {
  const errors: string[] = [];
  const types = role.credentialTypes;
  if (types.length === 0) errors.push('did not supply credential_type');
  for (const t of types) {
    if (!(CREDENTIAL_TYPES as readonly string[]).includes(t))
      errors.push(`unrecognized credential type: ${t}`);
  }
  const only = (t: CredentialType) => types.length > 0 && types.every((x) => x === t);
  const anyOf = (...ts: CredentialType[]) => types.some((x) => ts.includes(x));
  const stsTtlTypes =
    types.length > 0 && types.every((x) => x === 'assumed_role' || x === 'federation_token');
  if (role.defaultStsTtl !== 0 && !stsTtlTypes) {
    errors.push(
      'default_sts_ttl parameter only valid for assumed_role and federation_token credential types',
    );
  }
  if (role.maxStsTtl !== 0 && !stsTtlTypes) {
    errors.push(
      'max_sts_ttl parameter only valid for assumed_role and federation_token credential types',
    );
  }
  if (role.defaultStsTtl < 0) errors.push('default_sts_ttl must not be negative');
  if (role.maxStsTtl < 0) errors.push('max_sts_ttl must not be negative');
  if (role.defaultStsTtl > 0 && role.maxStsTtl > 0 && role.defaultStsTtl > role.maxStsTtl) {
    errors.push('"default_sts_ttl" value must be less than or equal to "max_sts_ttl" value');
  }
  if (role.userPath !== '') {
    if (!only('iam_user'))
      errors.push('user_path parameter only valid for iam_user credential type');
    if (!USER_PATH_REGEX.test(role.userPath)) {
      errors.push(
        `the specified value for user_path is invalid. It must match "${USER_PATH_REGEX_TEXT}" regexp`,
      );
    }
  }
  if (role.permissionsBoundaryArn !== '') {
    if (!only('iam_user'))
      errors.push("cannot supply permissions_boundary_arn when credential_type isn't iam_user");
    const problem = boundaryProblem(role.permissionsBoundaryArn);
    if (problem) errors.push(`invalid permissions_boundary_arn parameter: ${problem}`);
  }
  if (anyOf('session_token') && (role.policyDocument !== '' || role.policyArns.length > 0)) {
    errors.push('cannot supply a policy or role when using credential_type session_token');
  }
  if (role.roleArns.length > 0 && !only('assumed_role')) {
    errors.push("cannot supply role_arns when credential_type isn't assumed_role");
  }
  if (Object.keys(role.sessionTags).length > 0 && !only('assumed_role')) {
    errors.push("cannot supply session_tags when credential_type isn't assumed_role");
  }
  if (role.externalId !== '' && !only('assumed_role')) {
    errors.push("cannot supply external_id when credential_type isn't assumed_role");
  }
  // Rules the spec states for role writes (the reference only finds these at creds time).
  if (only('assumed_role') && role.roleArns.length === 0) {
    errors.push('role_arns is required when credential_type is assumed_role');
  }
  for (const t of ['iam_user', 'federation_token'] as const) {
    if (
      types.includes(t) &&
      !role.prohibitFlexibleCredPath &&
      role.policyArns.length === 0 &&
      role.policyDocument === ''
    ) {
      errors.push(
        `at least one of policy_arns or policy_document is required when credential_type is ${t}`,
      );
    }
  }
  return errors;
}

const NEW_PARAMS = [
  ['credential_type', 'an explicit credential_type'],
  ['role_arns', 'role_arns'],
  ['policy_arns', 'policy_arns'],
  ['policy_document', 'policy_document'],
  ['default_sts_ttl', 'default_sts_ttl'],
  ['max_sts_ttl', 'max_sts_ttl'],
  ['user_path', 'user_path'],
  ['permissions_boundary_arn', 'permissions_boundary_arn'],
] as const;

/** Legacy `policy` (a JSON document) or `arn` (a role or policy ARN), as early releases took them. */
function legacyWrite(
  raw: RoleFields,
  policy: string | undefined,
  arn: string | undefined,
): RoleWrite {
  for (const [field, phrase] of NEW_PARAMS) {
    if (raw.sent(field))
      throw new ValidationError(
        `cannot supply deprecated role or policy parameters with ${phrase}`,
      );
  }
  // These are accepted next to the legacy parameters but have no meaning there: say so, never drop silently.
  const ignored = (
    ['iam_groups', 'iam_tags', 'mfa_serial_number', 'session_tags', 'external_id'] as const
  ).filter((f) => raw.sent(f));
  if (policy !== undefined && arn !== undefined && policy !== '' && arn !== '') {
    throw new KeelError('internal', 'only one of policy or arn should be provided', {
      status: 500,
    });
  }
  const role = emptyRole();
  const value = policy ?? arn ?? '';
  if (policy !== undefined && policy !== '') {
    try {
      role.policyDocument = JSON.stringify(JSON.parse(policy));
    } catch {
      throw new ValidationError(`unable to parse supplied data: ${JSON.stringify(value)}`);
    }
    role.credentialTypes = ['iam_user', 'federation_token'];
    role.prohibitFlexibleCredPath = true;
  } else {
    let resource = '';
    try {
      resource = parseArn(value).resource;
    } catch {
      throw new ValidationError(`unable to parse supplied data: ${JSON.stringify(value)}`);
    }
    if (resource.startsWith('role/')) {
      role.credentialTypes = ['assumed_role'];
      role.roleArns = [value];
    } else if (resource.startsWith('policy/')) {
      role.credentialTypes = ['iam_user'];
      role.policyArns = [value];
    } else {
      throw new ValidationError(`unable to parse supplied data: ${JSON.stringify(value)}`);
    }
    role.prohibitFlexibleCredPath = true;
  }
  const warnings = [LEGACY_WARNING];
  if (ignored.length)
    warnings.push(
      `These parameters have no effect on a legacy role and were not stored: [${ignored.join(' ')}]`,
    );
  return { role, warnings };
}
