import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

let t: PkiTestApp;
beforeAll(async () => {
  t = await startPkiApp();
});
afterAll(async () => t.close());

const audit = async <T>(path: string): Promise<T> =>
  (
    (await t.request('GET', `/v1/sys/audit/${path}`, { token: t.tokens.secrets.root_token }))
      .json as { data: T }
  ).data;

describe('where each machine\u2019s streams live, as the contexts declare it', () => {
  it('gives every lifecycle the prefix its stream ids start with', async () => {
    const { machines } = await audit<{
      machines: { name: string; stream_prefix: string | null }[];
    }>('machines');
    expect(Object.fromEntries(machines.map((m) => [m.name, m.stream_prefix]))).toMatchObject({
      run: 'run-',
      'configuration-version': 'cv-',
      lease: 'aws-lease:',
      'static-role': 'aws-static-role:',
      certificate: 'pki/',
      'acme-account': 'pki/',
      'acme-order': 'pki/',
      'acme-authorization': 'pki/',
      'acme-challenge': 'pki/',
    });
  });

  it('folds a certificate stream, and none of the mount\u2019s other streams, as a certificate', async () => {
    await t.pki('POST', 'root/generate/internal', { common_name: 'root', key_type: 'ec' });
    await t.pki('POST', 'roles/web', { allow_any_name: true, key_type: 'ec', no_store: false });
    const issued = await t.pki('POST', 'issue/web', { common_name: 'a.example.com' });
    const serial = issued.data.serial_number as string;
    const { streams } = await audit<{ streams: { stream: string; state: string }[] }>(
      'machines/certificate/streams',
    );
    // the root's own record and the leaf: cert streams only, never the role, key or issuer
    expect(streams.every((s) => /^pki\/[^/]+\/cert\/[^/]+$/.test(s.stream))).toBe(true);
    expect(streams.some((s) => s.stream.endsWith(`/cert/${serial}`))).toBe(true);
  });
});
