import { describe, expect, it } from 'vitest';
import {
  maxAttempts,
  parseCredentialsFile,
  resolveCredentials,
  requestHandlerFor,
  resolveRegion,
  stsCandidates,
} from '../../../src/secrets/aws/provider.js';
import type { ReadText } from '../../../src/secrets/aws/provider.js';

const FILE = `
# a comment
[default]
aws_access_key_id = AKIAFILEDEFAULT00000
aws_secret_access_key = file-secret

[ci]
aws_access_key_id=AKIAFILECI0000000000
aws_secret_access_key=ci-secret
aws_session_token=ci-token
`;
const files =
  (map: Record<string, string>): ReadText =>
  (path) =>
    map[path] ?? null;
const noFiles: ReadText = () => null;

describe('credential precedence', () => {
  const env = {
    AWS_ACCESS_KEY_ID: 'AKIAENV0000000000000',
    AWS_SECRET_ACCESS_KEY: 'env-secret',
    AWS_SESSION_TOKEN: 'env-token',
    HOME: '/home/k',
  };
  const withFile = files({ '/home/k/.aws/credentials': FILE, '/etc/creds': FILE });

  it('takes the payload first, then the environment, then the shared file', () => {
    expect(resolveCredentials({ access_key: 'AKIACONF', secret_key: 's' }, env, withFile)).toEqual({
      accessKeyId: 'AKIACONF',
      secretAccessKey: 's',
      source: 'config',
    });
    expect(resolveCredentials({}, env, withFile)).toEqual({
      accessKeyId: 'AKIAENV0000000000000',
      secretAccessKey: 'env-secret',
      sessionToken: 'env-token',
      source: 'environment',
    });
    expect(resolveCredentials({}, { HOME: '/home/k' }, withFile)).toEqual({
      accessKeyId: 'AKIAFILEDEFAULT00000',
      secretAccessKey: 'file-secret',
      source: 'shared-file',
    });
    expect(
      resolveCredentials(
        {},
        { AWS_SHARED_CREDENTIALS_FILE: '/etc/creds', AWS_PROFILE: 'ci' },
        withFile,
      ),
    ).toEqual({
      accessKeyId: 'AKIAFILECI0000000000',
      secretAccessKey: 'ci-secret',
      sessionToken: 'ci-token',
      source: 'shared-file',
    });
  });

  it('accepts the older environment spellings and skips a half-set environment', () => {
    expect(
      resolveCredentials({}, { AWS_ACCESS_KEY: 'A', AWS_SECRET_KEY: 'B' }, noFiles).source,
    ).toBe('environment');
    expect(
      resolveCredentials({}, { AWS_ACCESS_KEY_ID: 'A', HOME: '/home/k' }, withFile).source,
    ).toBe('shared-file');
  });

  it('refuses a key without its secret, and no credentials at all', () => {
    expect(() => resolveCredentials({ access_key: 'AKIA' }, env, withFile)).toThrow(
      "static AWS client credentials haven't been properly configured (the access key or secret key were provided but not both)",
    );
    expect(() => resolveCredentials({}, { HOME: '/nowhere' }, noFiles)).toThrow(
      /^no AWS credentials found/,
    );
    expect(() =>
      resolveCredentials({}, { HOME: '/home/k', AWS_PROFILE: 'missing' }, withFile),
    ).toThrow(/^no AWS credentials found/);
  });

  it('parses shared credentials files', () => {
    const p = parseCredentialsFile(FILE);
    expect([...p.keys()]).toEqual(['default', 'ci']);
    expect(p.get('ci')?.get('aws_session_token')).toBe('ci-token');
  });
});

describe('regions, retries and STS candidates', () => {
  it('resolves the region from config, AWS_REGION, AWS_DEFAULT_REGION, then us-east-1', () => {
    expect(resolveRegion({ region: 'eu-west-1' }, { AWS_REGION: 'x' })).toBe('eu-west-1');
    expect(resolveRegion({}, { AWS_REGION: 'ap-south-1', AWS_DEFAULT_REGION: 'y' })).toBe(
      'ap-south-1',
    );
    expect(resolveRegion({}, { AWS_DEFAULT_REGION: 'ca-central-1' })).toBe('ca-central-1');
    expect(resolveRegion({}, {})).toBe('us-east-1');
  });

  it('maps max_retries to SDK attempts, -1 keeping the default', () => {
    expect(maxAttempts(undefined)).toBeUndefined();
    expect(maxAttempts(-1)).toBeUndefined();
    expect(maxAttempts(0)).toBe(1);
    expect(maxAttempts(4)).toBe(5);
  });

  it('lists the primary STS endpoint then the fallbacks paired with their regions', () => {
    expect(
      stsCandidates(
        {
          region: 'us-west-2',
          sts_endpoint: 'http://a',
          sts_region: 'eu-west-1',
          sts_fallback_endpoints: ['http://b', 'http://c'],
          sts_fallback_regions: ['us-east-2', 'us-west-1'],
        },
        {},
      ),
    ).toEqual([
      { endpoint: 'http://a', region: 'eu-west-1' },
      { endpoint: 'http://b', region: 'us-east-2' },
      { endpoint: 'http://c', region: 'us-west-1' },
    ]);
    expect(stsCandidates({ region: 'us-west-2' }, {})).toEqual([{ region: 'us-west-2' }]);
    expect(() => stsCandidates({ sts_fallback_endpoints: ['http://b'] }, {})).toThrow(
      'number of regions does not match number of endpoints',
    );
  });
});

describe("Keel's own listener certificates", () => {
  const listener = { origin: 'https://127.0.0.1:8420', ca: ['-----BEGIN CERTIFICATE-----'] };

  it("are trusted for endpoints at Keel's own origin only", () => {
    const own = requestHandlerFor('https://127.0.0.1:8420/cloud/iam', listener).requestHandler;
    expect(own?.httpsAgent.options.ca).toContain(listener.ca[0]);
    for (const other of ['https://127.0.0.1:8421/cloud/iam', 'https://iam.amazonaws.com', 'x'])
      expect(requestHandlerFor(other, listener)).toEqual({});
    expect(requestHandlerFor(undefined, listener)).toEqual({});
    expect(requestHandlerFor('https://127.0.0.1:8420/cloud/iam', undefined)).toEqual({});
  });
});
