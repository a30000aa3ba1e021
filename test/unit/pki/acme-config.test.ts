import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

const problemsOf = (env: NodeJS.ProcessEnv): string[] => {
  try {
    loadConfig({}, env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
};

describe('ACME validation ports', () => {
  it('default to 80 and 443; flags win over the environment', () => {
    expect(loadConfig({}, {})).toMatchObject({ acmeHttpPort: 80, acmeTlsPort: 443 });
    const c = loadConfig(
      { 'acme-http-port': '8080' },
      { KEEL_ACME_HTTP_PORT: '81', KEEL_ACME_TLS_PORT: '8443' },
    );
    expect(c).toMatchObject({ acmeHttpPort: 8080, acmeTlsPort: 8443 });
  });

  it('refuse what is not a port, naming the variable', () => {
    expect(problemsOf({ KEEL_ACME_HTTP_PORT: '0' })).toEqual([
      'KEEL_ACME_HTTP_PORT (--acme-http-port) must be an integer ≥ 1, got "0"',
    ]);
    expect(problemsOf({ KEEL_ACME_TLS_PORT: '70000' })).toEqual([
      'KEEL_ACME_TLS_PORT (--acme-tls-port) must be a port (1–65535), got 70000',
    ]);
  });
});
