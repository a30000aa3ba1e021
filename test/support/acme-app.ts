import type { KeyObject } from 'node:crypto';
import type { Config } from '../../src/config.js';
import { buildCsr } from '../../src/secrets/pki/ca.js';
import { encodeName } from '../../src/x509/certificate.js';
import { generateKeyPair } from '../../src/x509/keys.js';
import { AcmeTestClient, http01Server } from './acme-client.js';
import { startPkiApp, type PkiTestApp } from './pki-app.js';

export type AcmeTestApp = PkiTestApp & {
  directoryUrl: string;
  client(directory?: string): AcmeTestClient;
};

/** A PKI test app with a root CA, `config/cluster` pointing at itself and ACME enabled. */
export async function startAcmeApp(
  config: Partial<Config> = {},
  acme: Record<string, unknown> = {},
): Promise<AcmeTestApp> {
  const t = await startPkiApp(config);
  const ok = async (res: Promise<{ status: number; text: string }>) => {
    const r = await res;
    if (r.status >= 300) throw new Error(`setup: ${r.status} ${r.text}`);
  };
  await ok(
    t.pki('POST', 'root/generate/internal', {
      common_name: 'Keel ACME Root',
      key_type: 'ec',
      not_after: '2036-01-01T00:00:00Z',
    }),
  );
  await ok(t.pki('POST', 'config/cluster', { path: `${t.server.url}/v1/pki` }));
  await ok(t.pki('POST', 'config/acme', { enabled: true, ...acme }));
  const directoryUrl = `${t.server.url}/v1/pki/acme/directory`;
  return Object.assign(t, {
    directoryUrl,
    client: (directory = directoryUrl) => new AcmeTestClient(t.server.url, directory),
  });
}

/**
 * An ACME test app whose http-01 validations reach `web`, a responder on 127.0.0.1; `close`
 * stops both.
 */
export async function startAcmeHttpApp(): Promise<
  AcmeTestApp & { web: Awaited<ReturnType<typeof http01Server>> }
> {
  const web = await http01Server();
  const t = await startAcmeApp({ acmeHttpPort: web.port });
  const closeApp = t.close.bind(t);
  return Object.assign(t, {
    web,
    close: async () => {
      await closeApp();
      await web.close();
    },
  });
}

/**
 * A new account's order for one identifier: the client, the URLs of the order, its authorization
 * and the challenge of `type`, that challenge's token, and the challenge types offered.
 */
export async function acmeOrder(
  t: AcmeTestApp,
  identifier: { type: 'dns' | 'ip'; value: string },
  type: string,
) {
  const c = t.client();
  await c.register();
  const d = await c.directory();
  const order = await c.post(d.newOrder, { identifiers: [identifier] });
  if (order.status !== 201) throw new Error(`new-order: ${order.status} ${order.text}`);
  const [authzUrl] = (order.json as { authorizations: string[] }).authorizations;
  const authz = (await c.post(authzUrl!, undefined)).json as {
    challenges: { type: string; url: string; token: string }[];
  };
  const challenge = authz.challenges.find((x) => x.type === type)!;
  return {
    c,
    orderUrl: order.headers.get('location')!,
    authzUrl: authzUrl!,
    url: challenge.url,
    token: challenge.token,
    offered: authz.challenges.map((x) => x.type),
  };
}

/** A CSR (DER, base64url) for DNS names and IPs, with the first name as the common name. */
export async function acmeCsr(names: { dns?: string[]; ip?: string[] }): Promise<string> {
  return (await acmeCsrAndKey(names)).csr;
}

/** A CSR and its private key. */
export async function acmeCsrAndKey(names: {
  dns?: string[];
  ip?: string[];
}): Promise<{ csr: string; key: KeyObject }> {
  const { privateKey } = await generateKeyPair({ type: 'ec', bits: 256 });
  const alt = [
    ...(names.dns ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(names.ip ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  const der = buildCsr(privateKey, encodeName({ commonName: alt[0]?.value ?? '' }), alt, false);
  return { csr: der.toString('base64url'), key: privateKey };
}
