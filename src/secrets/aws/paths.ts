import { declarePath, field } from '../fields.js';

/**
 * The credentials engine's paths, relative to its mount, with their fields; routes.ts gives each
 * its handlers and lists them (AWS_PATHS), and parses requests with these (src/secrets/fields.ts).
 */

const NAME = { name: field.string('Name of the role', { required: true }) };

export const CONFIG_ROOT = declarePath({
  pattern: 'config/root',
  summary: 'Read or write the root credentials and the client settings',
  operations: ['read', 'update'],
  fields: {
    max_retries: field.int(
      'Maximum retries of a failed call (-1, the default: the client default)',
    ),
    access_key: field.string('Access key ID of the root credentials'),
    secret_key: field.string('Secret access key of the root credentials'),
    role_arn: field.string('Role to assume with a workload identity token (not supported)'),
    identity_token_audience: field.string(
      'Audience of the workload identity token (not supported)',
    ),
    identity_token_ttl: field.duration('TTL of the workload identity token (not supported)'),
    region: field.string('Region of the IAM and STS clients'),
    iam_endpoint: field.string('IAM endpoint URL'),
    sts_endpoint: field.string('STS endpoint URL'),
    sts_region: field.string('Region of the STS client'),
    sts_fallback_endpoints: field.commaSlice('STS endpoints tried in turn after the first'),
    sts_fallback_regions: field.commaSlice('Regions of the fallback STS endpoints'),
    username_template: field.string('Template of generated IAM user names'),
    rotation_period: field.duration('Rotate the root credentials this often'),
    rotation_schedule: field.string('Rotate the root credentials on this cron schedule'),
    rotation_window: field.duration('How long after a scheduled time a rotation may still run'),
    disable_automated_rotation: field.bool('Suspend scheduled root rotation'),
  },
});

export const ROTATE_ROOT = declarePath({
  pattern: 'config/rotate-root',
  summary: 'Rotate the root credentials now',
  operations: ['update'],
  fields: {},
});

export const CONFIG_LEASE = declarePath({
  pattern: 'config/lease',
  summary: 'Read or write the lease settings of iam_user credentials',
  operations: ['read', 'update'],
  fields: {
    lease: field.string('Default lease of iam_user credentials (a duration; required)'),
    lease_max: field.string('Maximum lease of iam_user credentials (a duration; required)'),
  },
});

export const ROLE = declarePath({
  pattern: 'roles/:name',
  summary: 'Read, write or delete a role',
  operations: ['read', 'update', 'delete'],
  fields: {
    ...NAME,
    credential_type: field.string('iam_user, assumed_role, federation_token or session_token'),
    role_arns: field.commaSlice('Roles that may be assumed (assumed_role)'),
    policy_arns: field.commaSlice('Managed policies attached to the credentials'),
    policy_document: field.string('Inline policy document (JSON)'),
    iam_groups: field.commaSlice('Groups an iam_user is added to'),
    iam_tags: field.kvPairs('Tags of an iam_user'),
    default_sts_ttl: field.duration('Default TTL of STS credentials'),
    max_sts_ttl: field.duration('Maximum TTL of STS credentials'),
    session_tags: field.kvPairs('Session tags of assumed_role credentials'),
    external_id: field.string('External ID passed when assuming the role'),
    user_path: field.string('Path of generated IAM users'),
    permissions_boundary_arn: field.string('Permissions boundary of generated IAM users'),
    mfa_serial_number: field.string('MFA device of session_token credentials'),
    policy: field.string('Deprecated: an inline policy document'),
    arn: field.string('Deprecated: a policy or role ARN'),
  },
});

const CREDS_FIELDS = {
  ...NAME,
  role_arn: field.string('Role to assume, when the role allows several'),
  role_session_name: field.string('Session name of assumed_role credentials'),
  ttl: field.duration('Requested TTL of STS credentials'),
  mfa_code: field.string('MFA code of session_token credentials'),
};
export const CREDS = declarePath({
  pattern: 'creds/:name',
  summary: 'Generate credentials under a role',
  operations: ['read', 'update'],
  fields: CREDS_FIELDS,
});
export const STS = declarePath({ ...CREDS, pattern: 'sts/:name' });

export const STATIC_ROLE = declarePath({
  pattern: 'static-roles/:name',
  summary: "Read, write or delete a static role (an existing user's rotated key)",
  operations: ['read', 'update', 'delete'],
  fields: {
    ...NAME,
    username: field.string('The IAM user whose key is managed'),
    rotation_period: field.duration('Rotate the key this often'),
    assume_role_arn: field.string('Role assumed to manage a user in another account'),
    assume_role_session_name: field.string('Session name used with assume_role_arn'),
    external_id: field.string('External ID used with assume_role_arn'),
  },
});
