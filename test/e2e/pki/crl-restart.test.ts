import { describe, expect, it } from 'vitest';
import { httpRequest } from '../../support/app.js';
import { eventually, openLog, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { PkiQueries } from '../../../src/secrets/pki/projection.js';
import { crlSerials } from '../../support/pki-crl.js';

const REVOKERS = 8;
const CERTIFICATES = 24;
/** Kills until one leaves a revocation its CRL does not list; each is checked after its restart. */
const ATTEMPTS = 6;

describe('a CRL build cut short by kill -9', () => {
  it('is made when the daemon starts again: every revocation recorded is on the CRL', async () => {
    let daemon = await startDaemon();
    const dataDir = daemon.dataDir;
    const token = daemon.bootstrap().secrets.root_token;
    const v1 = (d: RunningDaemon, method: string, path: string, body?: unknown) =>
      httpRequest(d.url, method, `/v1/pki/${path}`, {
        token,
        tokenHeader: 'x-vault-token',
        ...(body === undefined ? {} : { body }),
      });
    const revokedNow = async (d: RunningDaemon) =>
      ((await v1(d, 'LIST', 'certs/revoked')).json as { data?: { keys?: string[] } }).data?.keys ??
      [];
    const crlNow = async (d: RunningDaemon) =>
      crlSerials((await httpRequest(d.url, 'GET', '/v1/pki/crl/pem', { token: null })).text);
    const acknowledged: string[] = [];
    let leftBehind = 0;
    try {
      // An issuer whose RSA 4096 signature (milliseconds) keeps each CRL build in flight a while.
      const root = await v1(daemon, 'POST', 'root/generate/internal', {
        common_name: 'R',
        key_type: 'rsa',
        key_bits: 4096,
      });
      expect(root.status, root.text).toBe(200);
      await v1(daemon, 'POST', 'roles/web', { allow_any_name: true, key_type: 'ec', ttl: '1h' });

      for (let attempt = 1; attempt <= ATTEMPTS && leftBehind === 0; attempt++) {
        const d = daemon;
        const serials: string[] = [];
        for (let i = 0; i < CERTIFICATES; i++) {
          const res = await v1(d, 'POST', 'issue/web', { common_name: `c${i}.example.com` });
          expect(res.status, res.text).toBe(200);
          serials.push((res.json as { data: { serial_number: string } }).data.serial_number);
        }
        // Revokers take the serials in turn. A revocation is answered once its CRL lists it;
        // meanwhile it is recorded and its CRL not yet, which a watcher looks for.
        let next = 0;
        let done = false;
        const unanswered = new Set<string>();
        const revoker = async (): Promise<void> => {
          for (let i = next++; i < serials.length && !done; i = next++) {
            const serial = serials[i]!;
            unanswered.add(serial);
            const res = await v1(d, 'POST', 'revoke', { serial_number: serial }).catch(
              () => undefined,
            );
            if (res === undefined) return; // the daemon is gone
            unanswered.delete(serial);
            if (res.status === 200) acknowledged.push(serial);
          }
        };
        const revokers = Promise.all(Array.from({ length: REVOKERS }, revoker));
        // The daemon is killed as soon as a revocation reads as recorded while its request still
        // waits for its CRL (or, if none is seen, once every revocation is answered).
        for (;;) {
          const waiting = [...unanswered].at(-1);
          if (waiting === undefined) {
            if (next >= serials.length) break;
            await new Promise((resolve) => setImmediate(resolve));
            continue;
          }
          const read = await v1(d, 'GET', `cert/${encodeURIComponent(waiting)}`);
          const at = (read.json as { data?: { revocation_time?: number } }).data?.revocation_time;
          if (at !== undefined && at > 0 && unanswered.has(waiting)) break;
        }
        done = true;
        await d.stop('SIGKILL');
        await revokers;

        // What the kill left: a CRL behind a revocation recorded, read from the store itself.
        const store = openLog(dataDir);
        try {
          leftBehind += new PkiQueries(store.db).crlsBehind().length;
        } finally {
          store.db.close();
        }

        daemon = await startDaemon({ dataDir });
        const again = daemon;
        // Every revocation recorded, answered or not, is on the CRL once the start has built
        // what the killed daemon had not; nothing else is.
        const { revoked, onCrl } = await eventually(async () => {
          const revoked = await revokedNow(again);
          const onCrl = await crlNow(again);
          return revoked.every((s) => onCrl.has(s)) ? { revoked, onCrl } : undefined;
        });
        for (const s of acknowledged) expect(onCrl.has(s), s).toBe(true);
        expect([...onCrl].filter((s) => !revoked.includes(s))).toEqual([]);
      }
      // At least one kill came between a revocation and its CRL, so the start had work to do.
      expect(leftBehind).toBeGreaterThan(0);
    } finally {
      await daemon.stop('SIGKILL');
    }
  });
});
