import { NotFoundError, ValidationError } from '../../core/errors.js';
import { parseCron } from './cron.js';
import type { FieldData } from '../fields.js';
import type { CONFIG_LEASE, CONFIG_ROOT, CREDS, STATIC_ROLE } from './paths.js';
import { convertField } from '../fields.js';
import { MIN_STATIC_ROTATION_SECONDS } from '../../../machines/static-role.machine.js';

/** Role, static-role and mount-relative names: the reference's `GenericNameWithAtRegex`. */
const NAME = /^\w(([\w.@-]+)?\w)?$/;

/** A name segment that does not match is not a path of this engine (the reference answers 404). */
export function checkName(name: string | undefined): string {
  if (name === undefined || !NAME.test(name)) throw new NotFoundError('unsupported path');
  return name;
}

/** The non-secret part of the root configuration (the secret key is sealed separately). */
export interface RootSettings {
  accessKey: string;
  region: string;
  iamEndpoint: string;
  stsEndpoint: string;
  stsRegion: string;
  stsFallbackEndpoints: string[];
  stsFallbackRegions: string[];
  maxRetries: number;
  usernameTemplate: string;
  rotationPeriod: number;
  rotationSchedule: string;
  rotationWindow: number;
  disableAutomatedRotation: boolean;
}

export const ROOT_ROTATION_MIN_SECONDS = 10;
export const ROTATION_WINDOW_MIN_SECONDS = 3600;

/**
 * Applies a POST config/root body over the stored settings (absent fields keep their values, except
 * `username_template`, which resets to the default as in the reference). Returns the settings and the
 * secret key when one was given. Edition-restricted federation parameters are validated, then
 * refused: Keel has no plugin identity token issuer.
 */
export function applyRootWrite(
  existing: RootSettings | null,
  raw: FieldData<typeof CONFIG_ROOT.fields>,
  defaultTemplate: string,
): { settings: RootSettings; secretKey: string | undefined } {
  const accessKey = raw.get('access_key');
  const secretKey = raw.get('secret_key');
  const audience = raw.get('identity_token_audience') ?? '';
  const roleArn = raw.get('role_arn') ?? '';
  const tokenTtl = raw.get('identity_token_ttl');
  if (audience !== '' && (accessKey ?? '') !== '') {
    throw new ValidationError("only one of 'access_key' or 'identity_token_audience' can be set");
  }
  if (audience !== '' && roleArn === '') {
    throw new ValidationError("missing required 'role_arn' when 'identity_token_audience' is set");
  }
  if (tokenTtl !== undefined && tokenTtl < 0)
    throw new ValidationError('identity_token_ttl must not be negative');
  if (audience !== '' || roleArn !== '' || (tokenTtl !== undefined && tokenTtl !== 3600)) {
    throw new ValidationError(
      'plugin workload identity federation (identity_token_audience, role_arn, identity_token_ttl) is not supported by Keel: it has no plugin identity token issuer; configure access_key and secret_key instead',
    );
  }
  if ((accessKey ?? '') !== '' && (secretKey ?? '') === '') {
    throw new ValidationError('secret_key must be given with access_key');
  }
  if ((secretKey ?? '') !== '' && (accessKey ?? '') === '') {
    throw new ValidationError('access_key must be given with secret_key');
  }

  const s: RootSettings = existing
    ? structuredClone(existing)
    : {
        accessKey: '',
        region: '',
        iamEndpoint: '',
        stsEndpoint: '',
        stsRegion: '',
        stsFallbackEndpoints: [],
        stsFallbackRegions: [],
        maxRetries: -1,
        usernameTemplate: defaultTemplate,
        rotationPeriod: 0,
        rotationSchedule: '',
        rotationWindow: 0,
        disableAutomatedRotation: false,
      };
  if (accessKey !== undefined) s.accessKey = accessKey;
  // hvac sends `max_retries: null`, which the reference stores as 0.
  if (raw.sentNull('max_retries')) s.maxRetries = 0;
  const maxRetries = raw.get('max_retries');
  if (maxRetries !== undefined) {
    if (maxRetries < -1)
      throw new ValidationError('max_retries must be -1 (the client default) or more');
    s.maxRetries = maxRetries;
  }
  for (const [field, key] of [
    ['region', 'region'],
    ['iam_endpoint', 'iamEndpoint'],
    ['sts_endpoint', 'stsEndpoint'],
    ['sts_region', 'stsRegion'],
  ] as const) {
    const v = raw.get(field);
    if (v !== undefined) s[key] = v;
  }
  for (const field of ['iam_endpoint', 'sts_endpoint'] as const) {
    const v = raw.get(field);
    if (v) checkUrl(field, v);
  }
  const fallbackEndpoints = raw.get('sts_fallback_endpoints');
  if (fallbackEndpoints) {
    fallbackEndpoints.forEach((e) => checkUrl('sts_fallback_endpoints', e));
    s.stsFallbackEndpoints = fallbackEndpoints;
  }
  const fallbackRegions = raw.get('sts_fallback_regions');
  if (fallbackRegions) s.stsFallbackRegions = fallbackRegions;
  if (s.stsFallbackEndpoints.length !== s.stsFallbackRegions.length) {
    throw new ValidationError('fallback endpoints and fallback regions must be the same length');
  }
  const template = raw.get('username_template');
  s.usernameTemplate = template === undefined || template === '' ? defaultTemplate : template;
  applyRotation(s, raw);
  return { settings: s, secretKey };
}

/**
 * An endpoint as the engine calls it: one without a scheme (`localhost`, `iam.example:8443`) is
 * reached over HTTPS, as the reference's AWS SDK does. The stored value stays as it was written.
 */
export const endpointUrl = (value: string): string =>
  /^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `https://${value}`;

function checkUrl(field: string, value: string): void {
  let url: URL;
  try {
    url = new URL(endpointUrl(value));
  } catch {
    throw new ValidationError(`${field} must be an http or https URL: ${JSON.stringify(value)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ValidationError(`${field} must be an http or https URL: ${JSON.stringify(value)}`);
  }
}

/** The scheduled root rotation fields (edition-restricted in the reference; Keel applies them). */
function applyRotation(s: RootSettings, raw: FieldData<typeof CONFIG_ROOT.fields>): void {
  const period = raw.get('rotation_period');
  const schedule = raw.get('rotation_schedule');
  const window = raw.get('rotation_window');
  const disabled = raw.get('disable_automated_rotation');
  if ((period ?? 0) !== 0 && (schedule ?? '') !== '') {
    throw new ValidationError(
      'mutually exclusive fields rotation_schedule and rotation_period were both specified; only one of them can be provided',
    );
  }
  if (period !== undefined) {
    if (period !== 0 && period < ROOT_ROTATION_MIN_SECONDS) {
      throw new ValidationError(
        `rotation_period must be 0 (never) or at least ${ROOT_ROTATION_MIN_SECONDS} seconds`,
      );
    }
    if (period < 0) throw new ValidationError('rotation_period must not be negative');
    s.rotationPeriod = period;
    if (period !== 0) s.rotationSchedule = '';
  }
  if (schedule !== undefined) {
    if (schedule !== '') {
      try {
        parseCron(schedule);
      } catch (e) {
        throw new ValidationError(
          `failed to parse provided rotation_schedule: ${(e as Error).message}`,
        );
      }
      s.rotationPeriod = 0;
    }
    s.rotationSchedule = schedule;
  }
  if (window !== undefined) {
    if (window !== 0 && s.rotationPeriod !== 0)
      throw new ValidationError('rotation_window does not apply to period');
    if (window !== 0 && s.rotationSchedule === '') {
      throw new ValidationError('cannot use rotation_window without rotation_schedule');
    }
    if (window !== 0 && window < ROTATION_WINDOW_MIN_SECONDS) {
      throw new ValidationError(
        `rotation_window must be at least ${ROTATION_WINDOW_MIN_SECONDS} seconds (1 hour)`,
      );
    }
    s.rotationWindow = window;
  }
  if (s.rotationSchedule === '') s.rotationWindow = 0;
  if (disabled !== undefined) s.disableAutomatedRotation = disabled;
  if ((s.rotationPeriod !== 0 || s.rotationSchedule !== '') && s.accessKey === '') {
    throw new ValidationError(
      'scheduled root rotation needs static credentials: set access_key and secret_key',
    );
  }
}

/** POST config/lease: both values required, durations. */
export function parseLeaseWrite(raw: FieldData<typeof CONFIG_LEASE.fields>): {
  lease: number;
  leaseMax: number;
} {
  if (!raw.sent('lease')) throw new ValidationError("'lease' is a required parameter");
  if (!raw.sent('lease_max')) throw new ValidationError("'lease_max' is a required parameter");
  const parse = (field: 'lease' | 'lease_max', label: string) => {
    try {
      const v = convertField('duration', field, raw.get(field));
      if (v < 0) throw new Error('duration must not be negative');
      return v;
    } catch (e) {
      throw new ValidationError(`Invalid ${label}: ${(e as Error).message}`);
    }
  };
  return { lease: parse('lease', 'lease'), leaseMax: parse('lease_max', 'lease_max') };
}

export interface StaticRoleInput {
  username: string | undefined;
  rotationPeriod: number | undefined;
  assumeRoleArn: string | undefined;
  assumeRoleSessionName: string | undefined;
  externalId: string | undefined;
}

/** POST static-roles/:name fields, before the IAM user is looked up. */
export function parseStaticRoleWrite(
  raw: FieldData<typeof STATIC_ROLE.fields>,
  creating: boolean,
): StaticRoleInput {
  const input: StaticRoleInput = {
    username: raw.get('username'),
    rotationPeriod: raw.get('rotation_period'),
    assumeRoleArn: raw.get('assume_role_arn'),
    assumeRoleSessionName: raw.get('assume_role_session_name'),
    externalId: raw.get('external_id'),
  };
  if ((input.assumeRoleArn ?? '') !== '' && (input.assumeRoleSessionName ?? '') === '') {
    throw new ValidationError('assume_role_session_name is required when assume_role_arn is set');
  }
  if ((input.assumeRoleSessionName ?? '') !== '' && (input.assumeRoleArn ?? '') === '') {
    throw new ValidationError('assume_role_arn is required when assume_role_session_name is set');
  }
  if ((input.externalId ?? '') !== '' && (input.assumeRoleArn ?? '') === '') {
    throw new ValidationError('external_id is only used with assume_role_arn');
  }
  if (creating && (input.username ?? '') === '')
    throw new ValidationError('missing "username" parameter');
  if (creating && input.rotationPeriod === undefined)
    throw new ValidationError('missing "rotation_period" parameter');
  return input;
}

/** The spec's minimum: one minute. */
export function checkRotationPeriod(seconds: number): void {
  if (seconds < MIN_STATIC_ROTATION_SECONDS) {
    throw new ValidationError(
      `role rotation period out of range: must be at least ${MIN_STATIC_ROTATION_SECONDS} seconds (1 minute), got ${seconds}`,
    );
  }
}

export interface CredsInput {
  roleArn: string;
  roleSessionName: string;
  ttl: number | undefined;
  mfaCode: string;
}

/** GET|POST creds/:name and sts/:name parameters (query string or body). */
export function parseCredsRequest(raw: FieldData<typeof CREDS.fields>): CredsInput {
  const ttl = raw.get('ttl');
  if (ttl !== undefined && ttl < 0) throw new ValidationError('ttl must not be negative');
  return {
    roleArn: raw.get('role_arn') ?? '',
    roleSessionName: raw.get('role_session_name') ?? '',
    ttl: ttl === 0 ? undefined : ttl,
    mfaCode: raw.get('mfa_code') ?? '',
  };
}
