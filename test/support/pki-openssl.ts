import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey, type KeyObject } from 'node:crypto';

/** Pre-generated RSA-2048 keys, so tests do not pay ~200 ms per RSA key generation. */
export function fixtureRsaKey(n: 1 | 2 | 3): KeyObject {
  return createPrivateKey(
    readFileSync(new URL(`../fixtures/pki/rsa2048-${n}.pem`, import.meta.url), 'utf8'),
  );
}

/** A scratch directory for openssl input files; `done()` removes it. */
export function scratch(): { path(name: string, content?: string | Buffer): string; done(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'keel-pki-'));
  return {
    path(name, content) {
      const p = join(dir, name);
      if (content !== undefined) writeFileSync(p, content);
      return p;
    },
    done: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** Runs openssl; returns stdout and stderr together and whether it exited 0, never throwing. */
export function openssl(args: readonly string[], input?: string): { ok: boolean; out: string } {
  const r = spawnSync('openssl', args, { input, encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout}${r.stderr}` };
}

/**
 * A self-signed EC P-256 certificate and its key, written to `cert` and `key` by
 * `openssl req -x509` with the given `-addext` values; throws with openssl's words on failure.
 */
export function selfSignedEc(
  key: string,
  cert: string,
  subject: string,
  days: number,
  addext: readonly string[] = [],
): void {
  const made = openssl([
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:P-256',
    '-nodes',
    '-keyout',
    key,
    '-out',
    cert,
    '-days',
    String(days),
    '-subj',
    subject,
    ...addext.flatMap((e) => ['-addext', e]),
  ]);
  if (!made.ok) throw new Error(`openssl req -x509: ${made.out}`);
}
