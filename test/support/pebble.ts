import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { selfSignedEc } from './pki-openssl.js';

/** A port free on 127.0.0.1 now. */
export const freePort = (): Promise<number> =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

/** A running pebble (Let's Encrypt's ACME test server, Debian's `pebble`). */
export interface Pebble {
  name: 'pebble';
  directory: string;
  /** The CA of its HTTPS listener. */
  caFile: string;
  /** The port its http-01 validation connects to on 127.0.0.1. */
  httpPort: number;
  pid: number;
  stop(): Promise<void>;
}

export const PEBBLE = '/usr/bin/pebble';

/** pebble on loopback ports, its HTTPS listener under a certificate openssl makes in `dir`. */
export async function startPebble(dir: string): Promise<Pebble> {
  const [cert, key] = [join(dir, 'pebble-cert.pem'), join(dir, 'pebble-key.pem')];
  selfSignedEc(key, cert, '/CN=127.0.0.1', 1, ['subjectAltName=IP:127.0.0.1']);
  const [listen, management, httpPort, tlsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const config = join(dir, 'pebble-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${listen}`,
        managementListenAddress: `127.0.0.1:${management}`,
        certificate: cert,
        privateKey: key,
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const proc = spawn(PEBBLE, ['-config', config], {
    env: {
      ...process.env,
      PEBBLE_VA_NOSLEEP: '1',
      PEBBLE_WFE_NONCEREJECT: '0',
      PEBBLE_AUTHZREUSE: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      if (out.includes('ACME directory available at')) resolve();
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`pebble exited with ${code}:\n${out}`)));
  });
  return {
    name: 'pebble' as const,
    directory: `https://127.0.0.1:${listen}/dir`,
    caFile: cert,
    httpPort,
    pid: proc.pid!,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
  };
}
