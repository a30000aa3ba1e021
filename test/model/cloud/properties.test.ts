import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CloudError } from '../../../src/cloud/errors.js';
import { Params } from '../../../src/cloud/params.js';
import { evaluate, parsePolicy, wildcardMatch } from '../../../src/cloud/policy.js';
import { parseAuthorization, verifySignature } from '../../../src/cloud/sigv4.js';
import { signRequest } from '../../support/sigv4.js';

const token = fc.string({
  minLength: 1,
  maxLength: 12,
  unit: fc.constantFrom(...'abcXYZ019-_.~ %&=+/*'.split('')),
});
const at = fc.date({
  min: new Date('2000-01-01T00:00:00Z'),
  max: new Date('2099-12-31T00:00:00Z'),
  noInvalidDate: true,
});

describe('SigV4 properties', () => {
  it('verifies whatever it signs, and nothing that was changed afterwards', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(token, token, { maxKeys: 5 }),
        fc.uint8Array({ maxLength: 200 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.constantFrom('us-east-1', 'eu-west-3', 'anything'),
        at,
        async (query, bodyBytes, secret, region, now) => {
          const q = new URLSearchParams(query).toString().replace(/\+/g, '%20');
          const body = Buffer.from(bodyBytes);
          const req = {
            method: 'POST',
            path: '/cloud/iam',
            query: q,
            body,
            headers: { host: 'h:1' },
          };
          const headers = signRequest(
            req,
            { accessKeyId: 'AKIAPROP', secretAccessKey: secret },
            region,
            'iam',
            now,
          );
          const auth = parseAuthorization(headers.authorization ?? '');
          await verifySignature({ ...req, headers }, auth, secret, now);
          const tampered = Buffer.concat([body, Buffer.from('x')]);
          await expect(
            verifySignature({ ...req, body: tampered, headers }, auth, secret, now),
          ).rejects.toThrow(CloudError);
          await expect(
            verifySignature({ ...req, headers }, auth, `${secret}x`, now),
          ).rejects.toThrow(CloudError);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('policy properties', () => {
  const pattern = fc.string({ maxLength: 8, unit: fc.constantFrom('a', 'b', ':', '*', '?') });
  const text = fc.string({ maxLength: 8, unit: fc.constantFrom('a', 'b', ':') });

  it('wildcards agree with a straightforward recursive matcher', () => {
    const oracle = (p: string, s: string): boolean => {
      if (p === '') return s === '';
      if (p[0] === '*') return oracle(p.slice(1), s) || (s !== '' && oracle(p, s.slice(1)));
      if (s === '') return false;
      return (p[0] === '?' || p[0] === s[0]) && oracle(p.slice(1), s.slice(1));
    };
    fc.assert(
      fc.property(pattern, text, (p, s) => wildcardMatch(p, s) === oracle(p, s)),
      { numRuns: 500 },
    );
  });

  it('an explicit deny that matches always wins, whatever else is allowed', () => {
    fc.assert(
      fc.property(fc.array(pattern, { maxLength: 4 }), text, (allows, action) => {
        const docs = allows.map((a) =>
          parsePolicy(
            JSON.stringify({ Statement: { Effect: 'Allow', Action: `iam:${a}`, Resource: '*' } }),
          ),
        );
        const deny = parsePolicy(
          JSON.stringify({ Statement: { Effect: 'Deny', Action: '*', Resource: '*' } }),
        );
        expect(evaluate([...docs, deny], `iam:${action}`, 'arn:x')).toBe('deny');
        expect(evaluate(docs, `iam:${action}`, 'arn:x')).not.toBe('deny');
      }),
      { numRuns: 300 },
    );
  });
});

describe('Query parameter properties', () => {
  it('reads back every member list it is given, in order', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ maxLength: 10 }), { maxLength: 12 }), (items) => {
        const form = new URLSearchParams(
          items.map((v, i) => [`Names.member.${i + 1}`, v]),
        ).toString();
        expect(Params.parse(form).list('Names')).toEqual(items);
      }),
    );
  });
});
