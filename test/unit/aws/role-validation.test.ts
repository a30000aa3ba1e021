import { describe, expect, it } from 'vitest';
import { KeelError, ValidationError } from '../../../src/core/errors.js';
import {
  applyRoleWrite,
  LEGACY_WARNING,
  multierror,
} from '../../../src/secrets/aws/role-schema.js';
import { parseFields } from '../../../src/secrets/fields.js';
import { ROLE } from '../../../src/secrets/aws/paths.js';

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
      applyRoleWrite(
        null,
        parseFields(
          ROLE,
          {
            credential_type: 'iam_user',
            policy_document: POLICY,
            role_arns: 'arn:aws:iam::1:role/x',
          },
          { name: 'r' },
        ),
      ),
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
      'two types in one string (the reference takes the string as one type)',
      { credential_type: 'iam_user,federation_token', policy_document: POLICY },
      ['unrecognized credential type: iam_user,federation_token'],
    ],
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
    const e = fail(() => applyRoleWrite(null, parseFields(ROLE, body, { name: 'r' })));
    expect(e).toBeInstanceOf(ValidationError);
    expect(e.message).toBe(roleError(...errors));
  });

  it('accepts every type with its own parameters', () => {
    expect(
      applyRoleWrite(
        null,
        parseFields(
          ROLE,
          {
            credential_type: 'iam_user',
            policy_arns: 'a,b',
            iam_groups: ['g'],
            iam_tags: ['k=v'],
            user_path: '/x/',
            permissions_boundary_arn: 'arn:aws:iam::1:policy/b',
          },
          { name: 'r' },
        ),
      ).role,
    ).toMatchObject({ credentialTypes: ['iam_user'], policyArns: ['a', 'b'], iamTags: { k: 'v' } });
    expect(
      applyRoleWrite(
        null,
        parseFields(
          ROLE,
          {
            credential_type: 'assumed_role',
            role_arns: 'arn:aws:iam::1:role/x',
            session_tags: ['a=b', 'c=d'],
            external_id: 'e',
            default_sts_ttl: '15m',
            max_sts_ttl: 3600,
          },
          { name: 'r' },
        ),
      ).role,
    ).toMatchObject({ sessionTags: { a: 'b', c: 'd' }, defaultStsTtl: 900, maxStsTtl: 3600 });
    expect(
      applyRoleWrite(
        null,
        parseFields(
          ROLE,
          {
            credential_type: 'session_token',
            mfa_serial_number: 'arn:aws:iam::1:mfa/u',
          },
          { name: 'r' },
        ),
      ).role.mfaSerialNumber,
    ).toBe('arn:aws:iam::1:mfa/u');
  });

  it('stores a policy document compacted and refuses one that is not JSON', () => {
    expect(
      applyRoleWrite(
        null,
        parseFields(ROLE, { credential_type: 'iam_user', policy_document: POLICY }, { name: 'r' }),
      ).role.policyDocument,
    ).toBe('{"Version":"2012-10-17","Statement":[]}');
    expect(
      fail(() =>
        applyRoleWrite(
          null,
          parseFields(
            ROLE,
            { credential_type: 'iam_user', policy_document: '{nope' },
            { name: 'r' },
          ),
        ),
      ).message,
    ).toBe('cannot parse policy document: "{nope"');
  });

  it('is an upsert: fields not sent keep their values, and the result is validated whole', () => {
    const first = applyRoleWrite(
      null,
      parseFields(
        ROLE,
        {
          credential_type: 'assumed_role',
          role_arns: 'arn:aws:iam::1:role/x',
        },
        { name: 'r' },
      ),
    ).role;
    const second = applyRoleWrite(
      first,
      parseFields(ROLE, { max_sts_ttl: '2h' }, { name: 'r' }),
    ).role;
    expect(second).toMatchObject({
      credentialTypes: ['assumed_role'],
      roleArns: ['arn:aws:iam::1:role/x'],
      maxStsTtl: 7200,
    });
    expect(
      fail(() =>
        applyRoleWrite(
          first,
          parseFields(ROLE, { credential_type: 'iam_user', policy_arns: 'a' }, { name: 'r' }),
        ),
      ).message,
    ).toBe(roleError("cannot supply role_arns when credential_type isn't assumed_role"));
  });

  it('reports fields that do not convert', () => {
    expect(
      fail(() =>
        applyRoleWrite(
          null,
          parseFields(ROLE, { credential_type: 'iam_user', iam_tags: ['nokey'] }, { name: 'r' }),
        ),
      ).message,
    ).toBe(
      'Field validation failed: error converting input for field "iam_tags": invalid key pair "nokey"',
    );
    expect(
      fail(() =>
        applyRoleWrite(
          null,
          parseFields(
            ROLE,
            { credential_type: 'federation_token', max_sts_ttl: 'soon' },
            { name: 'r' },
          ),
        ),
      ).message,
    ).toBe(
      'Field validation failed: error converting input for field "max_sts_ttl": time: invalid duration "soon"',
    );
    expect(
      fail(() =>
        applyRoleWrite(
          null,
          parseFields(ROLE, { credential_type: 'iam_user', policy_arns: { a: 1 } }, { name: 'r' }),
        ),
      ).message,
    ).toMatch(/^Field validation failed: error converting input for field "policy_arns"/);
  });

  describe('legacy parameters', () => {
    it('policy becomes iam_user and federation_token, with the warning', () => {
      const w = applyRoleWrite(null, parseFields(ROLE, { policy: POLICY }, { name: 'r' }));
      expect(w.role.credentialTypes).toEqual(['iam_user', 'federation_token']);
      expect(w.role.prohibitFlexibleCredPath).toBe(true);
      expect(w.warnings).toEqual([LEGACY_WARNING]);
    });
    it('a role arn becomes assumed_role, a policy arn iam_user', () => {
      expect(
        applyRoleWrite(null, parseFields(ROLE, { arn: 'arn:aws:iam::1:role/x' }, { name: 'r' }))
          .role,
      ).toMatchObject({
        credentialTypes: ['assumed_role'],
        roleArns: ['arn:aws:iam::1:role/x'],
      });
      expect(
        applyRoleWrite(null, parseFields(ROLE, { arn: 'arn:aws:iam::aws:policy/A' }, { name: 'r' }))
          .role,
      ).toMatchObject({
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
          fail(() =>
            applyRoleWrite(
              null,
              parseFields(
                ROLE,
                // A value of the field's type: every declared field converts before the handler runs.
                { policy: POLICY, [field as string]: String(field).endsWith('_ttl') ? '1h' : 'x' },
                { name: 'r' },
              ),
            ),
          ).message,
        ).toBe(`cannot supply deprecated role or policy parameters with ${phrase}`);
      }
    });
    it('says which ignored parameters were not stored', () => {
      expect(
        applyRoleWrite(null, parseFields(ROLE, { policy: POLICY, iam_groups: 'g' }, { name: 'r' }))
          .warnings[1],
      ).toBe('These parameters have no effect on a legacy role and were not stored: [iam_groups]');
    });
    it('both policy and arn is the reference 500; unparseable values are 400', () => {
      const both = fail(() =>
        applyRoleWrite(
          null,
          parseFields(ROLE, { policy: POLICY, arn: 'arn:aws:iam::1:role/x' }, { name: 'r' }),
        ),
      );
      expect(both).toBeInstanceOf(KeelError);
      expect((both as KeelError).details.status).toBe(500);
      expect(both.message).toBe('only one of policy or arn should be provided');
      expect(
        fail(() => applyRoleWrite(null, parseFields(ROLE, { policy: 'nope' }, { name: 'r' })))
          .message,
      ).toBe('unable to parse supplied data: "nope"');
      expect(
        fail(() =>
          applyRoleWrite(null, parseFields(ROLE, { arn: 'arn:aws:iam::1:user/u' }, { name: 'r' })),
        ).message,
      ).toBe('unable to parse supplied data: "arn:aws:iam::1:user/u"');
    });
  });
});
