import type { Config } from '../../src/config.js';
import { startTestApp, type TestApp, type TestResponse } from './app.js';

/** A test app with the certificate authority engine mounted at `pki/`, and a root-token caller. */
export interface PkiTestApp extends TestApp {
  /** A `/v1/pki/...` call with the root token. */
  pki(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<TestResponse & { data: Record<string, unknown> }>;
}

/** Starts the whole app in process; bootstrap mounts the certificate authority at `pki/`. */
export async function startPkiApp(config: Partial<Config> = {}): Promise<PkiTestApp> {
  const t = await startTestApp({ config });
  return Object.assign(t, {
    async pki(method: string, path: string, body?: unknown) {
      const res = await t.request(method, `/v1/pki/${path}`, {
        token: t.tokens.secrets.root_token,
        tokenHeader: 'x-vault-token',
        ...(body === undefined ? {} : { body }),
      });
      const data = (res.json as { data?: Record<string, unknown> } | undefined)?.data ?? {};
      return { ...res, data };
    },
  });
}
