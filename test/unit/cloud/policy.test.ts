import { describe, expect, it } from 'vitest';
import { CloudError } from '../../../src/cloud/errors.js';
import { base32Decode, base32Encode, totp, totpMatches } from '../../../src/cloud/mfa.js';
import { Params, checkName, checkPath } from '../../../src/cloud/params.js';
import { evaluate, evaluateTrust, parsePolicy, wildcardMatch } from '../../../src/cloud/policy.js';
import { errorXml, members, successXml } from '../../../src/cloud/xml.js';

const doc = (...statements: object[]) =>
  JSON.stringify({ Version: '2012-10-17', Statement: statements });
const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof CloudError) return e.code;
    throw e;
  }
  return 'none';
};

describe('policy evaluation', () => {
  const readOnly = parsePolicy(
    doc({ Effect: 'Allow', Action: ['iam:Get*', 'iam:List*'], Resource: '*' }),
  );
  const denyBob = parsePolicy(
    doc({ Effect: 'Deny', Action: 'iam:*', Resource: 'arn:aws:iam::123456789012:user/bob' }),
  );

  it('matches actions case-insensitively and resources with wildcards', () => {
    expect(wildcardMatch('iam:Get*', 'IAM:GETUSER', true)).toBe(true);
    expect(wildcardMatch('arn:aws:iam::*:user/a?c', 'arn:aws:iam::1:user/abc')).toBe(true);
    expect(wildcardMatch('arn:aws:iam::*:user/a?c', 'arn:aws:iam::1:user/abbc')).toBe(false);
    expect(wildcardMatch('a.b', 'axb')).toBe(false);
  });

  it('allows what a statement grants, nothing else, and an explicit deny wins', () => {
    expect(evaluate([readOnly], 'iam:GetUser', 'arn:aws:iam::123456789012:user/x')).toBe('allow');
    expect(evaluate([readOnly], 'iam:CreateUser', 'arn:aws:iam::123456789012:user/x')).toBe(
      'implicit',
    );
    expect(evaluate([readOnly, denyBob], 'iam:GetUser', 'arn:aws:iam::123456789012:user/bob')).toBe(
      'deny',
    );
    expect(evaluate([], 'iam:GetUser', '*')).toBe('implicit');
  });

  it('honours NotAction and NotResource', () => {
    const p = parsePolicy(
      doc({ Effect: 'Allow', NotAction: 'iam:Delete*', NotResource: 'arn:secret' }),
    );
    expect(evaluate([p], 'iam:CreateUser', 'arn:x')).toBe('allow');
    expect(evaluate([p], 'iam:DeleteUser', 'arn:x')).toBe('implicit');
    expect(evaluate([p], 'iam:CreateUser', 'arn:secret')).toBe('implicit');
  });

  it('fails closed on conditions it does not implement', () => {
    const allowIf = parsePolicy(
      doc({
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } },
      }),
    );
    const denyIf = parsePolicy(
      doc({
        Effect: 'Deny',
        Action: '*',
        Resource: '*',
        Condition: { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } },
      }),
    );
    expect(evaluate([allowIf], 'iam:GetUser', '*')).toBe('implicit');
    expect(evaluate([readOnly, denyIf], 'iam:GetUser', '*')).toBe('deny');
    const byName = parsePolicy(
      doc({
        Effect: 'Allow',
        Action: '*',
        Resource: '*',
        Condition: { StringEquals: { 'aws:username': 'alice' } },
      }),
    );
    expect(evaluate([byName], 'iam:GetUser', '*', { 'aws:username': 'alice' })).toBe('allow');
    expect(evaluate([byName], 'iam:GetUser', '*', { 'aws:username': 'bob' })).toBe('implicit');
  });

  it('checks trust policies by principal and external id', () => {
    const trust = parsePolicy(
      doc({
        Effect: 'Allow',
        Action: 'sts:AssumeRole',
        Principal: { AWS: 'arn:aws:iam::123456789012:root' },
        Condition: { StringEquals: { 'sts:ExternalId': 'xyz' } },
      }),
      'trust',
    );
    const me = ['AWS:arn:aws:iam::123456789012:root'];
    expect(evaluateTrust(trust, 'sts:AssumeRole', me, { 'sts:ExternalId': 'xyz' })).toBe('allow');
    expect(evaluateTrust(trust, 'sts:AssumeRole', me, {})).toBe('implicit');
    expect(
      evaluateTrust(trust, 'sts:AssumeRole', ['AWS:999999999999'], { 'sts:ExternalId': 'xyz' }),
    ).toBe('implicit');
  });

  it('rejects malformed documents', () => {
    for (const bad of [
      'not json',
      '[]',
      JSON.stringify({ Version: '2099-01-01', Statement: [] }),
      JSON.stringify({ Version: '2012-10-17' }),
      doc({ Effect: 'Maybe', Action: '*', Resource: '*' }),
      doc({ Effect: 'Allow', Resource: '*' }),
      doc({ Effect: 'Allow', Action: '*' }),
      doc({ Effect: 'Allow', Action: 3, Resource: '*' }),
      doc({ Effect: 'Allow', Action: '*', Resource: '*', Principal: '*' }),
    ]) {
      expect(
        code(() => parsePolicy(bad)),
        bad,
      ).toBe('MalformedPolicyDocument');
    }
    expect(
      code(() => parsePolicy(doc({ Effect: 'Allow', Action: 'sts:AssumeRole' }), 'trust')),
    ).toBe('MalformedPolicyDocument');
  });
});

describe('query parameters', () => {
  it('reads X.member.N lists, tags and bounded integers', () => {
    const p = Params.parse(
      'Action=X&PolicyArns.member.1.arn=a&PolicyArns.member.2.arn=b&Tags.member.1.Key=k&Tags.member.1.Value=v&N=5&Empty=',
    );
    expect(p.list('PolicyArns', '.arn')).toEqual(['a', 'b']);
    expect(p.list('Empty')).toEqual([]);
    expect(p.tags()).toEqual([{ Key: 'k', Value: 'v' }]);
    expect(p.int('N', 1, 10)).toBe(5);
    expect(code(() => p.int('N', 900, 3600))).toBe('ValidationError');
    expect(code(() => p.required('Missing'))).toBe('ValidationError');
  });

  it('checks names and paths like IAM', () => {
    expect(checkName('a-b_c.d@e', 'userName', 64)).toBe('a-b_c.d@e');
    expect(code(() => checkName('x'.repeat(65), 'userName', 64))).toBe('ValidationError');
    expect(code(() => checkName('has space', 'userName', 64))).toBe('ValidationError');
    expect(checkPath(undefined)).toBe('/');
    expect(checkPath('/a/b/')).toBe('/a/b/');
    expect(code(() => checkPath('a/'))).toBe('ValidationError');
    expect(code(() => checkPath('/a'))).toBe('ValidationError');
  });
});

describe('TOTP and XML', () => {
  it('matches the RFC 6238 SHA-1 test vector (6-digit form)', () => {
    const seed = base32Encode(Buffer.from('12345678901234567890'));
    expect(base32Decode(seed).toString()).toBe('12345678901234567890');
    expect(totp(seed, new Date(59_000))).toBe('287082');
    expect(totp(seed, new Date(1111111109_000))).toBe('081804');
    expect(totpMatches(seed, new Date(89_000), '287082')).toBe(true);
    expect(totpMatches(seed, new Date(200_000), '287082')).toBe(false);
  });

  it('renders Query-protocol documents with escaping', () => {
    expect(
      successXml('ListThings', 'urn:x', { Things: members(['a<b']), IsTruncated: false }, 'r-1'),
    ).toBe(
      '<ListThingsResponse xmlns="urn:x"><ListThingsResult><Things><member>a&lt;b</member></Things><IsTruncated>false</IsTruncated></ListThingsResult><ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata></ListThingsResponse>',
    );
    expect(successXml('DeleteThing', 'urn:x', null, 'r-2')).toBe(
      '<DeleteThingResponse xmlns="urn:x"><ResponseMetadata><RequestId>r-2</RequestId></ResponseMetadata></DeleteThingResponse>',
    );
    expect(
      errorXml('urn:x', { type: 'Sender', code: 'NoSuchEntity', message: 'a & b' }, 'r-3'),
    ).toBe(
      '<ErrorResponse xmlns="urn:x"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>a &amp; b</Message></Error><RequestId>r-3</RequestId></ErrorResponse>',
    );
  });
});
