import { describe, expect, it } from 'vitest';
import { acmeCommand, type AcmeRequest } from '../../../src/secrets/pki/acme/protocol.js';
import type { AcmeService } from '../../../src/secrets/pki/acme/service.js';
import type { AcmeAccountRow } from '../../../src/secrets/pki/acme/projection.js';

/** An ACME service whose command runs at once, and whose read model holds `stored`. */
function serviceWith(stored: Partial<AcmeAccountRow> | undefined) {
  let ran = 0;
  const service = {
    authority: {
      run: <T>(fn: () => T): Promise<T> => {
        ran++;
        return Promise.resolve().then(fn);
      },
    },
    q: { account: () => stored },
  } as unknown as AcmeService;
  return { service, ran: () => ran };
}

const checked = { account_id: 'a1', jwk: '{"k":1}', status: 'valid' } as AcmeAccountRow;
const request = (account: AcmeAccountRow | undefined) =>
  ({ mount: 'm', account }) as unknown as AcmeRequest;

describe('an ACME command', () => {
  it('runs as a command of the authority, on the account as it is when decided', async () => {
    const now = { ...checked, contact: '["mailto:x@example.com"]' };
    const { service, ran } = serviceWith(now);
    const seen = await acmeCommand(service, request(checked), (req) => ({ body: req.account }));
    expect(ran()).toBe(1);
    expect(seen.body).toEqual(now);
  });

  it('is refused when the account was deactivated after the request was checked', async () => {
    const { service } = serviceWith({ ...checked, status: 'deactivated' });
    let handled = false;
    await expect(
      acmeCommand(service, request(checked), () => {
        handled = true;
        return {};
      }),
    ).rejects.toThrow('the account is deactivated');
    expect(handled).toBe(false);
  });

  it('is refused when the account key changed after the request was checked', async () => {
    const { service } = serviceWith({ ...checked, jwk: '{"k":2}' });
    await expect(acmeCommand(service, request(checked), () => ({}))).rejects.toThrow(
      'the account key changed',
    );
  });

  it('a request without an account (signed by a certificate key) is handled as it is', async () => {
    const { service } = serviceWith(undefined);
    const out = await acmeCommand(service, request(undefined), () => ({ status: 200 }));
    expect(out.status).toBe(200);
  });
});
