import { describe, expect, it } from 'vitest';
import { CloudError } from '../../src/cloud/errors.js';
import {
  canonicalRequest,
  computeSignature,
  formatAmzDate,
  parseAmzDate,
  parseAuthorization,
  signRequest,
  verifySignature,
} from '../../src/cloud/sigv4.js';
import type { SignedRequest } from '../../src/cloud/sigv4.js';

// The worked example of AWS's "Signature Version 4 signing process" documentation (IAM ListUsers).
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const example: SignedRequest = {
  method: 'GET',
  path: '/',
  query: 'Action=ListUsers&Version=2010-05-08',
  headers: {
    'content-type': 'application/x-www-form-urlencoded; charset=utf-8',
    host: 'iam.amazonaws.com',
    'x-amz-date': '20150830T123600Z',
  },
  body: Buffer.alloc(0),
};
const scope = {
  date: '20150830',
  region: 'us-east-1',
  service: 'iam',
  signedHeaders: ['content-type', 'host', 'x-amz-date'],
};
const EXPECTED = '5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7';
const at = new Date('2015-08-30T12:36:00Z');

const codeOf = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    if (e instanceof CloudError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return 'no error';
};

describe('SigV4', () => {
  it('reproduces the canonical request of the AWS documentation example', () => {
    expect(canonicalRequest(example, scope.signedHeaders)).toBe(
      [
        'GET',
        '/',
        'Action=ListUsers&Version=2010-05-08',
        'content-type:application/x-www-form-urlencoded; charset=utf-8',
        'host:iam.amazonaws.com',
        'x-amz-date:20150830T123600Z',
        '',
        'content-type;host;x-amz-date',
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855',
      ].join('\n'),
    );
  });

  it('computes the documented signature', () => {
    expect(computeSignature(example, scope, '20150830T123600Z', SECRET)).toBe(EXPECTED);
  });

  it('verifies the documented request at its own time and in any region it was signed for', () => {
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    expect(() => verifySignature(example, auth, SECRET, at)).not.toThrow();
    const other = { ...scope, region: 'eu-west-3' };
    const sig = computeSignature(example, other, '20150830T123600Z', SECRET);
    expect(() =>
      verifySignature(
        example,
        { ...other, accessKeyId: 'AKIDEXAMPLE', signature: sig },
        SECRET,
        at,
      ),
    ).not.toThrow();
  });

  it('rejects a wrong secret, a tampered body and a clock skew over five minutes', () => {
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    expect(codeOf(() => verifySignature(example, auth, 'wrong', at))).toMatch(
      /^SignatureDoesNotMatch: The request signature we calculated/,
    );
    expect(
      codeOf(() => verifySignature({ ...example, body: Buffer.from('x') }, auth, SECRET, at)),
    ).toMatch(/^SignatureDoesNotMatch/);
    const late = new Date(at.getTime() + 5 * 60_000 + 1000);
    expect(codeOf(() => verifySignature(example, auth, SECRET, late))).toBe(
      'SignatureDoesNotMatch: Signature expired: 20150830T123600Z is now earlier than 20150830T123601Z (20150830T124101Z - 5 min.)',
    );
    const early = new Date(at.getTime() - 5 * 60_000 - 1000);
    expect(codeOf(() => verifySignature(example, auth, SECRET, early))).toMatch(
      /^SignatureDoesNotMatch: Signature not yet current/,
    );
    // Exactly five minutes is still accepted.
    expect(() =>
      verifySignature(example, auth, SECRET, new Date(at.getTime() + 5 * 60_000)),
    ).not.toThrow();
  });

  it('parses the Authorization header and names what is missing', () => {
    const header = `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${EXPECTED}`;
    expect(parseAuthorization(header)).toEqual({
      accessKeyId: 'AKIDEXAMPLE',
      ...scope,
      signature: EXPECTED,
    });
    expect(
      codeOf(() => parseAuthorization('AWS4-HMAC-SHA256 Credential=A/b/c/iam/aws4_request')),
    ).toMatch(
      /^IncompleteSignature: Authorization header requires 'SignedHeaders' parameter\. Authorization header requires 'Signature' parameter\./,
    );
    expect(codeOf(() => parseAuthorization('Basic dXNlcjpwYXNz'))).toMatch(/^IncompleteSignature/);
    expect(
      codeOf(() =>
        parseAuthorization(
          'AWS4-HMAC-SHA256 Credential=AKID/20150830/iam, SignedHeaders=host, Signature=ab',
        ),
      ),
    ).toMatch(/^IncompleteSignature: Credential should be scoped/);
  });

  it('round-trips amz dates and signs what it verifies', () => {
    expect(formatAmzDate(at)).toBe('20150830T123600Z');
    expect(parseAmzDate('20150830T123600Z')?.toISOString()).toBe('2015-08-30T12:36:00.000Z');
    expect(parseAmzDate('2015-08-30')).toBeNull();
    const req = {
      method: 'POST',
      path: '/cloud/sts/',
      query: '',
      body: Buffer.from('Action=GetCallerIdentity&Version=2011-06-15'),
      headers: { host: 'localhost:1', 'content-type': 'application/x-www-form-urlencoded' },
    };
    const headers = signRequest(
      req,
      { accessKeyId: 'AKIAX', secretAccessKey: 's3cret', sessionToken: 'tok' },
      'ap-south-1',
      'sts',
      at,
    );
    expect(headers['x-amz-security-token']).toBe('tok');
    const auth = parseAuthorization(headers.authorization ?? '');
    expect(auth.signedHeaders).toEqual([
      'content-type',
      'host',
      'x-amz-date',
      'x-amz-security-token',
    ]);
    expect(() => verifySignature({ ...req, headers }, auth, 's3cret', at)).not.toThrow();
  });
});
