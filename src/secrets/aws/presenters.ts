import { formatGoDuration } from '../duration.js';
import type { RoleEntry } from './role-schema.js';
import type { RootSettings } from './schema.js';

/** Wire shapes of the engine's reads (research §3); nothing secret ever passes through here. */

/** GET config/root: every non-secret field; `secret_key` is never returned. */
export function presentRoot(s: RootSettings): Record<string, unknown> {
  return {
    access_key: s.accessKey,
    region: s.region,
    iam_endpoint: s.iamEndpoint,
    sts_endpoint: s.stsEndpoint,
    sts_region: s.stsRegion,
    sts_fallback_endpoints: s.stsFallbackEndpoints,
    sts_fallback_regions: s.stsFallbackRegions,
    max_retries: s.maxRetries,
    username_template: s.usernameTemplate,
    role_arn: '',
    identity_token_audience: '',
    identity_token_ttl: 0,
    rotation_period: s.rotationPeriod,
    rotation_schedule: s.rotationSchedule,
    rotation_window: s.rotationWindow,
    disable_automated_rotation: s.disableAutomatedRotation,
  };
}

/** GET config/lease in Go's duration form, e.g. `{"lease":"30m0s","lease_max":"12h0m0s"}`. */
export const presentLease = (lease: number, leaseMax: number) => ({
  lease: formatGoDuration(lease),
  lease_max: formatGoDuration(leaseMax),
});

const listOrNull = (l: readonly string[]) => (l.length ? [...l] : null);
const mapOrNull = (m: Readonly<Record<string, string>>) =>
  Object.keys(m).length ? { ...m } : null;

/** GET roles/:name: every field, with both `credential_types` (spec) and `credential_type` (reference). */
export function presentRole(r: RoleEntry): Record<string, unknown> {
  return {
    credential_types: [...r.credentialTypes],
    credential_type: r.credentialTypes.join(','),
    role_arns: listOrNull(r.roleArns),
    policy_arns: listOrNull(r.policyArns),
    policy_document: r.policyDocument,
    iam_groups: listOrNull(r.iamGroups),
    iam_tags: mapOrNull(r.iamTags),
    default_sts_ttl: r.defaultStsTtl,
    max_sts_ttl: r.maxStsTtl,
    session_tags: mapOrNull(r.sessionTags),
    external_id: r.externalId,
    user_path: r.userPath,
    permissions_boundary_arn: r.permissionsBoundaryArn,
    mfa_serial_number: r.mfaSerialNumber,
  };
}

export interface StaticRoleView {
  name: string;
  username: string;
  userId: string;
  rotationPeriod: number;
  assumeRoleArn: string;
  assumeRoleSessionName: string;
  externalId: string;
}

/** POST and GET static-roles/:name, wrapped in `data`, with `rotation_period` in integer seconds. */
export const presentStaticRole = (r: StaticRoleView) => ({
  name: r.name,
  id: r.userId,
  username: r.username,
  rotation_period: r.rotationPeriod,
  assume_role_arn: r.assumeRoleArn,
  assume_role_session_name: r.assumeRoleSessionName,
  external_id: r.externalId,
});
