import { describe, expect, it } from 'vitest';
import { CloudError } from '../../../src/cloud/errors.js';
import {
  formatAmzDate,
  parseAmzDate,
  parseAuthorization,
  verifySignature,
} from '../../../src/cloud/sigv4.js';
import type { SignedRequest } from '../../../src/cloud/sigv4.js';
import { canonicalRequest, computeSignature, signRequest } from '../../support/sigv4.js';

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

const codeOf = async (fn: () => unknown): Promise<string> => {
  try {
    await fn();
  } catch (e) {
    if (e instanceof CloudError) return `${e.code}: ${e.message}`;
    throw e;
  }
  return 'no error';
};

describe('SigV4', () => {
  // The tests' own signer (test/support/sigv4.ts) is checked against the documentation too.
  it('signs the AWS documentation example as documented', () => {
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

  it('verifies the documented request at its own time and in any region it was signed for', async () => {
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    expect(await codeOf(() => verifySignature(example, auth, SECRET, at))).toBe('no error');
    const other = { ...scope, region: 'eu-west-3' };
    const sig = computeSignature(example, other, '20150830T123600Z', SECRET);
    expect(
      await codeOf(() =>
        verifySignature(
          example,
          { ...other, accessKeyId: 'AKIDEXAMPLE', signature: sig },
          SECRET,
          at,
        ),
      ),
    ).toBe('no error');
  });

  it('rejects a wrong secret, a tampered body and a clock skew over five minutes', async () => {
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    expect(await codeOf(() => verifySignature(example, auth, 'wrong', at))).toMatch(
      /^SignatureDoesNotMatch: The request signature we calculated/,
    );
    expect(
      await codeOf(() => verifySignature({ ...example, body: Buffer.from('x') }, auth, SECRET, at)),
    ).toMatch(/^SignatureDoesNotMatch/);
    const late = new Date(at.getTime() + 5 * 60_000 + 1000);
    expect(await codeOf(() => verifySignature(example, auth, SECRET, late))).toBe(
      'SignatureDoesNotMatch: Signature expired: 20150830T123600Z is now earlier than 20150830T123601Z (20150830T124101Z - 5 min.)',
    );
    const early = new Date(at.getTime() - 5 * 60_000 - 1000);
    expect(await codeOf(() => verifySignature(example, auth, SECRET, early))).toMatch(
      /^SignatureDoesNotMatch: Signature not yet current/,
    );
    // Exactly five minutes is still accepted.
    expect(
      await codeOf(() =>
        verifySignature(example, auth, SECRET, new Date(at.getTime() + 5 * 60_000)),
      ),
    ).toBe('no error');
  });

  it('covers only the headers the client signed, and one it names but lacks as empty', async () => {
    const withExtra = { ...example, headers: { ...example.headers, 'user-agent': 'x/1' } };
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    expect(await codeOf(() => verifySignature(withExtra, auth, SECRET, at))).toBe('no error');
    // A client may sign a header the SDK would not sign itself (user-agent), and may leave
    // x-amz-date unsigned; a header it names but did not send is signed as empty.
    const named = ['content-type', 'host', 'user-agent', 'x-missing'];
    const sig = computeSignature(
      withExtra,
      { ...scope, signedHeaders: named },
      '20150830T123600Z',
      SECRET,
    );
    const signed = { ...scope, signedHeaders: named, accessKeyId: 'AKIDEXAMPLE', signature: sig };
    expect(await codeOf(() => verifySignature(withExtra, signed, SECRET, at))).toBe('no error');
    const changed = { ...withExtra, headers: { ...withExtra.headers, 'user-agent': 'x/2' } };
    expect(await codeOf(() => verifySignature(changed, signed, SECRET, at))).toMatch(
      /^SignatureDoesNotMatch: The request signature we calculated/,
    );
  });

  it('signs the body received, never a payload hash the client states in its place', async () => {
    const named = [...scope.signedHeaders, 'x-amz-content-sha256'].sort();
    // Signed as a client does that takes the stated hash as the payload's (the SDK's signer).
    const sign = (req: SignedRequest): string =>
      computeSignature(
        req,
        { ...scope, signedHeaders: named },
        '20150830T123600Z',
        SECRET,
        req.headers['x-amz-content-sha256'],
      );
    const stating = (hash: string): SignedRequest => ({
      ...example,
      headers: { ...example.headers, 'x-amz-content-sha256': hash },
    });
    const bodyHash = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
    const honest = stating(bodyHash);
    const auth = { ...scope, signedHeaders: named, accessKeyId: 'AKIDEXAMPLE' };
    expect(
      await codeOf(() => verifySignature(honest, { ...auth, signature: sign(honest) }, SECRET, at)),
    ).toBe('no error');
    // A client that signed UNSIGNED-PAYLOAD in place of the body's hash is refused, although the
    // SDK's signer, which takes that header as the payload hash, computes the same signature.
    const unsigned = stating('UNSIGNED-PAYLOAD');
    expect(
      await codeOf(() =>
        verifySignature(unsigned, { ...auth, signature: sign(unsigned) }, SECRET, at),
      ),
    ).toMatch(/^SignatureDoesNotMatch: The request signature we calculated/);
  });

  it('refuses a header list the SDK would sign otherwise, and an X-Amz-Signature query parameter', async () => {
    const auth = { ...scope, accessKeyId: 'AKIDEXAMPLE', signature: EXPECTED };
    // Lists the SDK's signer would sign otherwise than named (unsorted, repeated, or with the
    // Authorization or Date header it never signs) are refused, even when signed consistently.
    for (const list of [
      ['host', 'content-type', 'x-amz-date'],
      ['content-type', 'host', 'host', 'x-amz-date'],
      ['authorization', 'content-type', 'host', 'x-amz-date'],
    ]) {
      const signature = computeSignature(
        example,
        { ...scope, signedHeaders: list },
        '20150830T123600Z',
        SECRET,
      );
      const listed = { ...auth, signedHeaders: list, signature };
      expect(await codeOf(() => verifySignature(example, listed, SECRET, at))).toBe(
        `SignatureDoesNotMatch: SignedHeaders must name each header once, in lower case and sorted, and neither 'authorization' nor 'date' (X-Amz-Date dates the request): '${list.join(';')}'.`,
      );
    }
    // The signature over the other headers alone, which is what the SDK's signer computes for a
    // list naming Date: the Date header the client claims to have signed is anything at all.
    const dated = { ...example, headers: { ...example.headers, date: 'forged' } };
    const claims = { ...auth, signedHeaders: ['content-type', 'date', 'host', 'x-amz-date'] };
    expect(await codeOf(() => verifySignature(dated, claims, SECRET, at))).toMatch(
      /^SignatureDoesNotMatch: SignedHeaders must name each header once/,
    );
    const query = { ...example, query: `${example.query}&X-Amz-Signature=00` };
    expect(await codeOf(() => verifySignature(query, auth, SECRET, at))).toBe(
      "SignatureDoesNotMatch: Keel does not take an 'X-Amz-Signature' query parameter beside the Authorization header.",
    );
  });

  it('parses the Authorization header and names what is missing', async () => {
    const header = `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=${EXPECTED}`;
    expect(parseAuthorization(header)).toEqual({
      accessKeyId: 'AKIDEXAMPLE',
      ...scope,
      signature: EXPECTED,
    });
    expect(
      await codeOf(() => parseAuthorization('AWS4-HMAC-SHA256 Credential=A/b/c/iam/aws4_request')),
    ).toMatch(
      /^IncompleteSignature: Authorization header requires 'SignedHeaders' parameter\. Authorization header requires 'Signature' parameter\./,
    );
    expect(await codeOf(() => parseAuthorization('Basic dXNlcjpwYXNz'))).toMatch(
      /^IncompleteSignature/,
    );
    expect(
      await codeOf(() =>
        parseAuthorization(
          'AWS4-HMAC-SHA256 Credential=AKID/20150830/iam, SignedHeaders=host, Signature=ab',
        ),
      ),
    ).toMatch(/^IncompleteSignature: Credential should be scoped/);
  });

  it('round-trips amz dates and verifies what the tests sign', async () => {
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
    expect(await codeOf(() => verifySignature({ ...req, headers }, auth, 's3cret', at))).toBe(
      'no error',
    );
  });
});
