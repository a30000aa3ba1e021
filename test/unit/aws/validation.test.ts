import { describe, expect, it } from 'vitest';
import { KeelError, ValidationError } from '../../../src/core/errors.js';
import {
  applyRoleWrite,
  LEGACY_WARNING,
  multierror,
} from '../../../src/secrets/aws/role-schema.js';
import {
  applyRootWrite,
  checkName,
  checkRotationPeriod,
  parseCredsRequest,
  parseLeaseWrite,
  parseStaticRoleWrite,
} from '../../../src/secrets/aws/schema.js';
import { formatGoDuration, parseDurationSeconds } from '../../../src/secrets/aws/durations.js';
import { parseCron } from '../../../src/secrets/aws/cron.js';
import { providerError } from '../../../src/secrets/aws/deps.js';

const roleError = (...errors: string[]) =>
  `error(s) validating supplied role data: ${JSON.stringify(multierror(errors))}`;
const fail = (f: () => unknown): Error => {
  try {
    f();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected an error');
};

describe('role writes', () => {
  const POLICY = '{"Version": "2012-10-17", "Statement": []}';
  it('formats errors as the reference: a quoted multierror inside the 400 text', () => {
    const e = fail(() =>
      applyRoleWrite(null, {
        credential_type: 'iam_user',
        policy_document: POLICY,
        role_arns: 'arn:aws:iam::1:role/x',
      }),
    );
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(
      'error(s) validating supplied role data: "1 error occurred:\\n\\t* cannot supply role_arns when credential_type isn\'t assumed_role\\n\\n"',
    );
  });

  const rules: [string, Record<string, unknown>, string[]][] = [
    ['no credential_type', { policy_document: POLICY }, ['did not supply credential_type']],
    ['unknown type', { credential_type: 'root' }, ['unrecognized credential type: root']],
    [
      'default_sts_ttl on iam_user',
      {
        credential_type: 'iam_user',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        default_sts_ttl: 60,
      },
      [
        'default_sts_ttl parameter only valid for assumed_role and federation_token credential types',
      ],
    ],
    [
      'max_sts_ttl on iam_user',
      { credential_type: 'iam_user', policy_arns: 'arn:aws:iam::aws:policy/A', max_sts_ttl: '1h' },
      ['max_sts_ttl parameter only valid for assumed_role and federation_token credential types'],
    ],
    [
      'default_sts_ttl on session_token',
      { credential_type: 'session_token', default_sts_ttl: 900 },
      [
        'default_sts_ttl parameter only valid for assumed_role and federation_token credential types',
      ],
    ],
    [
      'default over max',
      {
        credential_type: 'federation_token',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        default_sts_ttl: '2h',
        max_sts_ttl: '1h',
      },
      ['"default_sts_ttl" value must be less than or equal to "max_sts_ttl" value'],
    ],
    [
      'user_path on assumed_role',
      { credential_type: 'assumed_role', role_arns: 'arn:aws:iam::1:role/x', user_path: '/a/' },
      ['user_path parameter only valid for iam_user credential type'],
    ],
    [
      'bad user_path',
      { credential_type: 'iam_user', policy_arns: 'arn:aws:iam::aws:policy/A', user_path: 'nope' },
      [
        'the specified value for user_path is invalid. It must match "^\\/([\\x21-\\x7F]{0,510}\\/)?$" regexp',
      ],
    ],
    [
      'boundary on federation_token',
      {
        credential_type: 'federation_token',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        permissions_boundary_arn: 'arn:aws:iam::1:policy/b',
      },
      ["cannot supply permissions_boundary_arn when credential_type isn't iam_user"],
    ],
    [
      'boundary bad prefix',
      {
        credential_type: 'iam_user',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        permissions_boundary_arn: 'nope',
      },
      ['invalid permissions_boundary_arn parameter: arn: invalid prefix'],
    ],
    [
      'boundary wrong service',
      {
        credential_type: 'iam_user',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        permissions_boundary_arn: 'arn:aws:s3:::bucket/x',
      },
      ['invalid permissions_boundary_arn parameter: expected a service of iam but got s3'],
    ],
    [
      'boundary wrong resource',
      {
        credential_type: 'iam_user',
        policy_arns: 'arn:aws:iam::aws:policy/A',
        permissions_boundary_arn: 'arn:aws:iam::1:role/x',
      },
      [
        'invalid permissions_boundary_arn parameter: expected a resource type of policy but got role',
      ],
    ],
    [
      'policy with session_token',
      { credential_type: 'session_token', policy_arns: 'arn:aws:iam::aws:policy/A' },
      ['cannot supply a policy or role when using credential_type session_token'],
    ],
    [
      'role_arns not assumed_role',
      {
        credential_type: 'federation_token',
        policy_document: POLICY,
        role_arns: ['arn:aws:iam::1:role/x'],
      },
      ["cannot supply role_arns when credential_type isn't assumed_role"],
    ],
    [
      'session_tags not assumed_role',
      { credential_type: 'federation_token', policy_document: POLICY, session_tags: { a: 'b' } },
      ["cannot supply session_tags when credential_type isn't assumed_role"],
    ],
    [
      'external_id not assumed_role',
      { credential_type: 'session_token', external_id: 'x' },
      ["cannot supply external_id when credential_type isn't assumed_role"],
    ],
    [
      'assumed_role without role_arns',
      { credential_type: 'assumed_role' },
      ['role_arns is required when credential_type is assumed_role'],
    ],
    [
      'iam_user without policy',
      { credential_type: 'iam_user' },
      [
        'at least one of policy_arns or policy_document is required when credential_type is iam_user',
      ],
    ],
    [
      'federation_token without policy',
      { credential_type: 'federation_token' },
      [
        'at least one of policy_arns or policy_document is required when credential_type is federation_token',
      ],
    ],
    [
      'several at once',
      {
        credential_type: 'iam_user',
        policy_document: POLICY,
        role_arns: 'arn:aws:iam::1:role/x',
        external_id: 'e',
      },
      [
        "cannot supply role_arns when credential_type isn't assumed_role",
        "cannot supply external_id when credential_type isn't assumed_role",
      ],
    ],
  ];
  it.each(rules)('%s', (_t, body, errors) => {
    const e = fail(() => applyRoleWrite(null, body));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(roleError(...errors));
  });

  it('accepts every type with its own parameters', () => {
    expect(
      applyRoleWrite(null, {
        credential_type: 'iam_user',
        policy_arns: 'a,b',
        iam_groups: ['g'],
        iam_tags: ['k=v'],
        user_path: '/x/',
        permissions_boundary_arn: 'arn:aws:iam::1:policy/b',
      }).role,
    ).toMatchObject({ credentialTypes: ['iam_user'], policyArns: ['a', 'b'], iamTags: { k: 'v' } });
    expect(
      applyRoleWrite(null, {
        credential_type: 'assumed_role',
        role_arns: 'arn:aws:iam::1:role/x',
        session_tags: 'a=b,c=d',
        external_id: 'e',
        default_sts_ttl: '15m',
        max_sts_ttl: 3600,
      }).role,
    ).toMatchObject({ sessionTags: { a: 'b', c: 'd' }, defaultStsTtl: 900, maxStsTtl: 3600 });
    expect(
      applyRoleWrite(null, {
        credential_type: 'session_token',
        mfa_serial_number: 'arn:aws:iam::1:mfa/u',
      }).role.mfaSerialNumber,
    ).toBe('arn:aws:iam::1:mfa/u');
  });

  it('stores a policy document compacted and refuses one that is not JSON', () => {
    expect(
      applyRoleWrite(null, { credential_type: 'iam_user', policy_document: POLICY }).role
        .policyDocument,
    ).toBe('{"Version":"2012-10-17","Statement":[]}');
    expect(
      fail(() => applyRoleWrite(null, { credential_type: 'iam_user', policy_document: '{nope' }))
        .message,
    ).toBe('cannot parse policy document: "{nope"');
  });

  it('is an upsert: fields not sent keep their values, and the result is validated whole', () => {
    const first = applyRoleWrite(null, {
      credential_type: 'assumed_role',
      role_arns: 'arn:aws:iam::1:role/x',
    }).role;
    const second = applyRoleWrite(first, { max_sts_ttl: '2h' }).role;
    expect(second).toMatchObject({
      credentialTypes: ['assumed_role'],
      roleArns: ['arn:aws:iam::1:role/x'],
      maxStsTtl: 7200,
    });
    expect(
      fail(() => applyRoleWrite(first, { credential_type: 'iam_user', policy_arns: 'a' })).message,
    ).toBe(roleError("cannot supply role_arns when credential_type isn't assumed_role"));
  });

  it('reports fields that do not convert', () => {
    expect(
      fail(() => applyRoleWrite(null, { credential_type: 'iam_user', iam_tags: ['nokey'] }))
        .message,
    ).toBe(
      'Field validation failed: error converting input for field "iam_tags": invalid key pair "nokey"',
    );
    expect(
      fail(() => applyRoleWrite(null, { credential_type: 'federation_token', max_sts_ttl: 'soon' }))
        .message,
    ).toBe(
      'Field validation failed: error converting input for field "max_sts_ttl": time: invalid duration "soon"',
    );
    expect(
      fail(() => applyRoleWrite(null, { credential_type: 'iam_user', policy_arns: { a: 1 } }))
        .message,
    ).toMatch(/^Field validation failed: error converting input for field "policy_arns"/);
  });

  describe('legacy parameters', () => {
    it('policy becomes iam_user and federation_token, with the warning', () => {
      const w = applyRoleWrite(null, { policy: POLICY });
      expect(w.role.credentialTypes).toEqual(['iam_user', 'federation_token']);
      expect(w.role.prohibitFlexibleCredPath).toBe(true);
      expect(w.warnings).toEqual([LEGACY_WARNING]);
    });
    it('a role arn becomes assumed_role, a policy arn iam_user', () => {
      expect(applyRoleWrite(null, { arn: 'arn:aws:iam::1:role/x' }).role).toMatchObject({
        credentialTypes: ['assumed_role'],
        roleArns: ['arn:aws:iam::1:role/x'],
      });
      expect(applyRoleWrite(null, { arn: 'arn:aws:iam::aws:policy/A' }).role).toMatchObject({
        credentialTypes: ['iam_user'],
        policyArns: ['arn:aws:iam::aws:policy/A'],
      });
    });
    it('cannot be mixed with the new parameters', () => {
      for (const [field, phrase] of [
        ['credential_type', 'an explicit credential_type'],
        ['role_arns', 'role_arns'],
        ['policy_arns', 'policy_arns'],
        ['policy_document', 'policy_document'],
        ['default_sts_ttl', 'default_sts_ttl'],
        ['max_sts_ttl', 'max_sts_ttl'],
        ['user_path', 'user_path'],
        ['permissions_boundary_arn', 'permissions_boundary_arn'],
      ]) {
        expect(
          fail(() => applyRoleWrite(null, { policy: POLICY, [field as string]: 'x' })).message,
        ).toBe(`cannot supply deprecated role or policy parameters with ${phrase}`);
      }
    });
    it('says which ignored parameters were not stored', () => {
      expect(applyRoleWrite(null, { policy: POLICY, iam_groups: 'g' }).warnings[1]).toBe(
        'These parameters have no effect on a legacy role and were not stored: [iam_groups]',
      );
    });
    it('both policy and arn is the reference 500; unparseable values are 400', () => {
      const both = fail(() =>
        applyRoleWrite(null, { policy: POLICY, arn: 'arn:aws:iam::1:role/x' }),
      );
      expect(both).toBeInstanceOf(KeelError);
      expect((both as KeelError).details.status).toBe(500);
      expect(both.message).toBe('only one of policy or arn should be provided');
      expect(fail(() => applyRoleWrite(null, { policy: 'nope' })).message).toBe(
        'unable to parse supplied data: "nope"',
      );
      expect(fail(() => applyRoleWrite(null, { arn: 'arn:aws:iam::1:user/u' })).message).toBe(
        'unable to parse supplied data: "arn:aws:iam::1:user/u"',
      );
    });
  });
});

describe('config/root writes', () => {
  const T = 'TEMPLATE';
  const ok = (raw: Record<string, unknown>) => applyRootWrite(null, raw, T).settings;
  const err = (raw: Record<string, unknown>) => fail(() => applyRootWrite(null, raw, T)).message;
  it('defaults', () => {
    expect(ok({ access_key: 'A', secret_key: 'S' })).toMatchObject({
      maxRetries: -1,
      usernameTemplate: T,
      rotationPeriod: 0,
    });
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
      'failed to parse provided rotation_schedule: minute value 61 out of range [0, 59]',
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
    expect(fail(() => applyRootWrite(null, raw, T))).toBeInstanceOf(ValidationError);
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
    const b = applyRootWrite(a, { rotation_period: '1h' }, T).settings;
    expect(b).toMatchObject({ rotationPeriod: 3600, rotationSchedule: '', rotationWindow: 0 });
  });
  it('resets the username template when a write omits it, keeps other fields', () => {
    const a = ok({ access_key: 'A', secret_key: 'S', region: 'eu-west-1', username_template: 'x' });
    expect(applyRootWrite(a, {}, T).settings).toMatchObject({
      region: 'eu-west-1',
      usernameTemplate: T,
      accessKey: 'A',
    });
  });
});

describe('other parameters', () => {
  it('config/lease', () => {
    expect(parseLeaseWrite({ lease: '30m', lease_max: '12h' })).toEqual({
      lease: 1800,
      leaseMax: 43200,
    });
    expect(fail(() => parseLeaseWrite({ lease_max: '1h' })).message).toBe(
      "'lease' is a required parameter",
    );
    expect(fail(() => parseLeaseWrite({ lease: '1h' })).message).toBe(
      "'lease_max' is a required parameter",
    );
    expect(fail(() => parseLeaseWrite({ lease: 'x', lease_max: '1h' })).message).toMatch(
      /^Invalid lease: /,
    );
    expect(fail(() => parseLeaseWrite({ lease: '1h', lease_max: 'x' })).message).toMatch(
      /^Invalid lease_max: /,
    );
  });
  it('static roles', () => {
    expect(fail(() => parseStaticRoleWrite({ rotation_period: 60 }, true)).message).toBe(
      'missing "username" parameter',
    );
    expect(fail(() => parseStaticRoleWrite({ username: 'u' }, true)).message).toBe(
      'missing "rotation_period" parameter',
    );
    expect(parseStaticRoleWrite({ rotation_period: '24h' }, false).rotationPeriod).toBe(86400);
    expect(
      fail(() =>
        parseStaticRoleWrite({ username: 'u', rotation_period: 60, assume_role_arn: 'a' }, true),
      ).message,
    ).toBe('assume_role_session_name is required when assume_role_arn is set');
    expect(
      fail(() =>
        parseStaticRoleWrite(
          { username: 'u', rotation_period: 60, assume_role_session_name: 's' },
          true,
        ),
      ).message,
    ).toBe('assume_role_arn is required when assume_role_session_name is set');
    expect(
      fail(() =>
        parseStaticRoleWrite({ username: 'u', rotation_period: 60, external_id: 'e' }, true),
      ).message,
    ).toBe('external_id is only used with assume_role_arn');
    expect(fail(() => checkRotationPeriod(59)).message).toBe(
      'role rotation period out of range: must be at least 60 seconds (1 minute), got 59',
    );
    expect(() => checkRotationPeriod(60)).not.toThrow();
  });
  it('creds parameters', () => {
    expect(parseCredsRequest({ ttl: '15m', role_arn: 'a' })).toEqual({
      roleArn: 'a',
      roleSessionName: '',
      ttl: 900,
      mfaCode: '',
    });
    expect(fail(() => parseCredsRequest({ ttl: 'x' })).message).toBe(
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
    expect([3600, '3600', '1h', '1h30m', '1.5h', '90s', '500ms'].map(parseDurationSeconds)).toEqual(
      [3600, 3600, 3600, 5400, 5400, 90, 0],
    );
    expect(() => parseDurationSeconds('1d')).toThrow('time: invalid duration "1d"');
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
