import { describe, expect, it } from 'vitest';
import { ValidationError } from '../../../src/core/errors.js';
import {
  applyRootWrite,
  checkName,
  endpointUrl,
  checkRotationPeriod,
  parseCredsRequest,
  parseLeaseWrite,
  parseStaticRoleWrite,
} from '../../../src/secrets/aws/schema.js';
import { formatGoDuration } from '../../../src/secrets/duration.js';
import { convertField, parseFields } from '../../../src/secrets/fields.js';
import { parseCron } from '../../../src/secrets/aws/cron.js';
import { providerError } from '../../../src/secrets/aws/deps.js';
import { CONFIG_LEASE, CONFIG_ROOT, CREDS, STATIC_ROLE } from '../../../src/secrets/aws/paths.js';

const fail = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
};

describe('config/root writes', () => {
  const T = 'TEMPLATE';
  const ok = (raw: Record<string, unknown>) =>
    applyRootWrite(null, parseFields(CONFIG_ROOT, raw), T).settings;
  const err = (raw: Record<string, unknown>) =>
    fail(() => applyRootWrite(null, parseFields(CONFIG_ROOT, raw), T)).message;
  it('defaults', () => {
    expect(ok({ access_key: 'A', secret_key: 'S' })).toMatchObject({
      maxRetries: -1,
      usernameTemplate: T,
      rotationPeriod: 0,
    });
  });
  it('stores an endpoint without a scheme as written (the SDK reaches it over HTTPS)', () => {
    expect(ok({ iam_endpoint: 'localhost', sts_endpoint: 'sts.example:8443' })).toMatchObject({
      iamEndpoint: 'localhost',
      stsEndpoint: 'sts.example:8443',
    });
    expect(endpointUrl('localhost')).toBe('https://localhost');
    expect(endpointUrl('http://127.0.0.1:9000')).toBe('http://127.0.0.1:9000');
  });
  it("stores hvac's max_retries null as 0", () =>
    expect(ok({ max_retries: null }).maxRetries).toBe(0));
  const cases: [Record<string, unknown>, string][] = [
    [
      { access_key: 'A', identity_token_audience: 'x' },
      "only one of 'access_key' or 'identity_token_audience' can be set",
    ],
    [
      { identity_token_audience: 'x' },
      "missing required 'role_arn' when 'identity_token_audience' is set",
    ],
    [
      { identity_token_audience: 'x', role_arn: 'arn:aws:iam::1:role/r' },
      'plugin workload identity federation (identity_token_audience, role_arn, identity_token_ttl) is not supported by Keel: it has no plugin identity token issuer; configure access_key and secret_key instead',
    ],
    [
      { identity_token_ttl: 'x' },
      'Field validation failed: error converting input for field "identity_token_ttl": time: invalid duration "x"',
    ],
    [{ access_key: 'A' }, 'secret_key must be given with access_key'],
    [{ secret_key: 'S' }, 'access_key must be given with secret_key'],
    [
      { max_retries: 'x' },
      'Field validation failed: error converting input for field "max_retries": cannot parse \'max_retries\' as int: "x"',
    ],
    [{ max_retries: -2 }, 'max_retries must be -1 (the client default) or more'],
    [
      { sts_fallback_endpoints: 'http://a' },
      'fallback endpoints and fallback regions must be the same length',
    ],
    [{ iam_endpoint: 'ftp://x' }, 'iam_endpoint must be an http or https URL: "ftp://x"'],
    [
      { access_key: 'A', secret_key: 'S', rotation_period: 60, rotation_schedule: '* * * * *' },
      'mutually exclusive fields rotation_schedule and rotation_period were both specified; only one of them can be provided',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_period: 5 },
      'rotation_period must be 0 (never) or at least 10 seconds',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_schedule: '* * *' },
      'failed to parse provided rotation_schedule: expected exactly 5 fields, found 3: * * *',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_schedule: '61 * * * *' },
      'failed to parse provided rotation_schedule: CronPattern: Invalid value for minute: 61',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_period: 60, rotation_window: '2h' },
      'rotation_window does not apply to period',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_window: '2h' },
      'cannot use rotation_window without rotation_schedule',
    ],
    [
      { access_key: 'A', secret_key: 'S', rotation_schedule: '0 * * * *', rotation_window: 60 },
      'rotation_window must be at least 3600 seconds (1 hour)',
    ],
    [
      { rotation_period: 60 },
      'scheduled root rotation needs static credentials: set access_key and secret_key',
    ],
    [
      { disable_automated_rotation: 'maybe' },
      'Field validation failed: error converting input for field "disable_automated_rotation": cannot parse \'disable_automated_rotation\' as bool: "maybe"',
    ],
  ];
  it.each(cases)('%j → 400', (raw, message) => {
    expect(fail(() => applyRootWrite(null, parseFields(CONFIG_ROOT, raw), T))).toBeInstanceOf(
      ValidationError,
    );
    expect(err(raw)).toBe(message);
  });
  it('applies rotation settings and lets one kind replace the other', () => {
    const a = ok({
      access_key: 'A',
      secret_key: 'S',
      rotation_schedule: '0 3 * * *',
      rotation_window: '1h',
    });
    expect(a).toMatchObject({ rotationSchedule: '0 3 * * *', rotationWindow: 3600 });
    const b = applyRootWrite(a, parseFields(CONFIG_ROOT, { rotation_period: '1h' }), T).settings;
    expect(b).toMatchObject({ rotationPeriod: 3600, rotationSchedule: '', rotationWindow: 0 });
  });
  it('resets the username template when a write omits it, keeps other fields', () => {
    const a = ok({ access_key: 'A', secret_key: 'S', region: 'eu-west-1', username_template: 'x' });
    expect(applyRootWrite(a, parseFields(CONFIG_ROOT, {}), T).settings).toMatchObject({
      region: 'eu-west-1',
      usernameTemplate: T,
      accessKey: 'A',
    });
  });
});

describe('other parameters', () => {
  it('config/lease', () => {
    expect(parseLeaseWrite(parseFields(CONFIG_LEASE, { lease: '30m', lease_max: '12h' }))).toEqual({
      lease: 1800,
      leaseMax: 43200,
    });
    expect(
      fail(() => parseLeaseWrite(parseFields(CONFIG_LEASE, { lease_max: '1h' }))).message,
    ).toBe("'lease' is a required parameter");
    expect(fail(() => parseLeaseWrite(parseFields(CONFIG_LEASE, { lease: '1h' }))).message).toBe(
      "'lease_max' is a required parameter",
    );
    expect(
      fail(() => parseLeaseWrite(parseFields(CONFIG_LEASE, { lease: 'x', lease_max: '1h' })))
        .message,
    ).toMatch(/^Invalid lease: /);
    expect(
      fail(() => parseLeaseWrite(parseFields(CONFIG_LEASE, { lease: '1h', lease_max: 'x' })))
        .message,
    ).toMatch(/^Invalid lease_max: /);
  });
  it('static roles', () => {
    expect(
      fail(() =>
        parseStaticRoleWrite(
          parseFields(STATIC_ROLE, { rotation_period: 60 }, { name: 'r' }),
          true,
        ),
      ).message,
    ).toBe('missing "username" parameter');
    expect(
      fail(() =>
        parseStaticRoleWrite(parseFields(STATIC_ROLE, { username: 'u' }, { name: 'r' }), true),
      ).message,
    ).toBe('missing "rotation_period" parameter');
    expect(
      parseStaticRoleWrite(
        parseFields(STATIC_ROLE, { rotation_period: '24h' }, { name: 'r' }),
        false,
      ).rotationPeriod,
    ).toBe(86400);
    expect(
      fail(() =>
        parseStaticRoleWrite(
          parseFields(
            STATIC_ROLE,
            { username: 'u', rotation_period: 60, assume_role_arn: 'a' },
            { name: 'r' },
          ),
          true,
        ),
      ).message,
    ).toBe('assume_role_session_name is required when assume_role_arn is set');
    expect(
      fail(() =>
        parseStaticRoleWrite(
          parseFields(
            STATIC_ROLE,
            { username: 'u', rotation_period: 60, assume_role_session_name: 's' },
            { name: 'r' },
          ),
          true,
        ),
      ).message,
    ).toBe('assume_role_arn is required when assume_role_session_name is set');
    expect(
      fail(() =>
        parseStaticRoleWrite(
          parseFields(
            STATIC_ROLE,
            { username: 'u', rotation_period: 60, external_id: 'e' },
            { name: 'r' },
          ),
          true,
        ),
      ).message,
    ).toBe('external_id is only used with assume_role_arn');
    expect(fail(() => checkRotationPeriod(59)).message).toBe(
      'role rotation period out of range: must be at least 60 seconds (1 minute), got 59',
    );
    expect(() => checkRotationPeriod(60)).not.toThrow();
  });
  it('creds parameters', () => {
    expect(
      parseCredsRequest(parseFields(CREDS, { ttl: '15m', role_arn: 'a' }, { name: 'r' })),
    ).toEqual({
      roleArn: 'a',
      roleSessionName: '',
      ttl: 900,
      mfaCode: '',
    });
    expect(
      fail(() => parseCredsRequest(parseFields(CREDS, { ttl: 'x' }, { name: 'r' }))).message,
    ).toBe(
      'Field validation failed: error converting input for field "ttl": time: invalid duration "x"',
    );
  });
  it('names', () => {
    expect(checkName('a.b-c@d_e')).toBe('a.b-c@d_e');
    for (const bad of ['', '-a', 'a-', 'a b', 'a/b'])
      expect(fail(() => checkName(bad)).message).toBe('unsupported path');
  });
});

describe('durations and cron', () => {
  it('parses seconds and Go durations; formats like Go', () => {
    const seconds = (v: unknown) => convertField('duration', 'ttl', v);
    expect([3600, '3600', '1h', '1h30m', '1.5h', '90s', '500ms', '1d'].map(seconds)).toEqual([
      3600, 3600, 3600, 5400, 5400, 90, 0, 86400,
    ]);
    expect(() => seconds('soon')).toThrow('time: invalid duration "soon"');
    expect([0, 45, 1800, 43200, 2764800, 3661].map(formatGoDuration)).toEqual([
      '0s',
      '45s',
      '30m0s',
      '12h0m0s',
      '768h0m0s',
      '1h1m1s',
    ]);
  });
  it('finds the next matching minute', () => {
    const at = new Date('2026-01-01T10:17:30Z');
    expect(parseCron('*/15 * * * *').next(at).toISOString()).toBe('2026-01-01T10:30:00.000Z');
    expect(parseCron('0 3 * * *').next(at).toISOString()).toBe('2026-01-02T03:00:00.000Z');
    expect(parseCron('0 0 1 jan *').next(at).toISOString()).toBe('2027-01-01T00:00:00.000Z');
    expect(parseCron('30 9 * * mon-fri').next(new Date('2026-01-03T00:00:00Z')).toISOString()).toBe(
      '2026-01-05T09:30:00.000Z',
    );
    expect(() => parseCron('0 0 31 2 *').next(at)).toThrow('never matches');
  });
  it('takes the descriptors, @every and a CRON_TZ prefix as the reference does', () => {
    const at = new Date('2026-01-01T10:17:30.250Z');
    const next = (s: string) => parseCron(s).next(at).toISOString();
    expect(next('@daily')).toBe('2026-01-02T00:00:00.000Z');
    expect(next('@midnight')).toBe('2026-01-02T00:00:00.000Z');
    expect(next('@hourly')).toBe('2026-01-01T11:00:00.000Z');
    expect(next('@weekly')).toBe('2026-01-04T00:00:00.000Z');
    expect(next('@monthly')).toBe('2026-02-01T00:00:00.000Z');
    expect(next('@yearly')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('@annually')).toBe('2027-01-01T00:00:00.000Z');
    expect(next('@every 90m')).toBe('2026-01-01T11:47:30.000Z');
    expect(next('@every 1h30m')).toBe('2026-01-01T11:47:30.000Z');
    // 09:00 in New York is 14:00 UTC in January (EST) and 13:00 UTC in July (EDT).
    expect(next('CRON_TZ=America/New_York 0 9 * * *')).toBe('2026-01-01T14:00:00.000Z');
    expect(
      parseCron('TZ=America/New_York 0 9 * * *')
        .next(new Date('2026-07-01T00:00:00Z'))
        .toISOString(),
    ).toBe('2026-07-01T13:00:00.000Z');
    // Both days restricted: either matches (1 Jan 2026 is a Thursday).
    expect(next('0 0 1 * mon')).toBe('2026-01-05T00:00:00.000Z');
    expect(() => parseCron('@fortnightly')).toThrow('unrecognized descriptor: @fortnightly');
    expect(() => parseCron('@every soon')).toThrow('failed to parse duration @every soon');
    expect(() => parseCron('CRON_TZ=Mars/Olympus 0 9 * * *')).toThrow(
      'provided bad location Mars/Olympus',
    );
    expect(() => parseCron('0 0 * * * *')).toThrow('expected exactly 5 fields, found 6');
  });
});

describe('provider errors', () => {
  const awsError = (name: string, message: string) =>
    Object.assign(new Error(message), {
      name,
      $metadata: { httpStatusCode: 409, requestId: 'req-1' },
    });
  it('reads as aws-sdk-go prints it, under the step that failed', () => {
    const e = providerError(
      'Error creating IAM user',
      awsError('EntityAlreadyExistsException', 'User with name x already exists.'),
    );
    expect(e.code).toBe('validation');
    expect(e.message).toBe(
      'Error creating IAM user: EntityAlreadyExists: User with name x already exists.\n\tstatus code: 409, request id: req-1',
    );
  });
  it('throttling is a 502', () => {
    const e = providerError('Error assuming role', awsError('Throttling', 'Rate exceeded'));
    expect(e.details.status).toBe(502);
  });
});
