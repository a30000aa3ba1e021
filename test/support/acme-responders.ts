import { createHash } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { isIP, type AddressInfo } from 'node:net';
import { createServer } from 'node:tls';
import { scratch, selfSignedEc } from './pki-openssl.js';

/** The challenge digest of dns-01 and tls-alpn-01: SHA-256 of the key authorization. */
export const challengeDigest = (keyAuthorization: string) =>
  createHash('sha256').update(keyAuthorization).digest();

/**
 * A DNS server on 127.0.0.1 (UDP) answering TXT and A questions from two tables, written from
 * RFC 1035: unknown names get NXDOMAIN.
 */
export async function txtServer(): Promise<{
  port: number;
  records: Map<string, string[]>;
  /** name → IPv4 address (A records) */
  addresses: Map<string, string>;
  close(): Promise<void>;
}> {
  const records = new Map<string, string[]>();
  const addresses = new Map<string, string>();
  const rdata = (type: number, name: string): Buffer[] => {
    if (type === 16)
      return (records.get(name) ?? []).map((text) =>
        Buffer.concat([Buffer.from([text.length]), Buffer.from(text, 'latin1')]),
      );
    const address = type === 1 ? addresses.get(name) : undefined;
    return address === undefined ? [] : [Buffer.from(address.split('.').map(Number))];
  };
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    const labels: string[] = [];
    let at = 12;
    while (query[at]! !== 0) {
      const len = query[at]!;
      labels.push(query.subarray(at + 1, at + 1 + len).toString('latin1'));
      at += len + 1;
    }
    const questionEnd = at + 5;
    const type = query.readUInt16BE(at + 1);
    const answers = rdata(type, labels.join('.').toLowerCase());
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2);
    header.writeUInt16BE(answers.length ? 0x8180 : 0x8183, 2);
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    const rrs = answers.map((data) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0);
      rr.writeUInt16BE(type, 2);
      rr.writeUInt16BE(1, 4);
      rr.writeUInt32BE(60, 6);
      rr.writeUInt16BE(data.length, 10);
      return Buffer.concat([rr, data]);
    });
    socket.send(
      Buffer.concat([header, query.subarray(12, questionEnd), ...rrs]),
      peer.port,
      peer.address,
    );
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    records,
    addresses,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}

/** A self-signed certificate from openssl naming `ip` (or a DNS name), with an acmeIdentifier extension. */
function alpnCertificate(
  ip: string,
  digest: Buffer,
  critical: boolean,
): { key: Buffer; cert: Buffer } {
  const dir = scratch();
  try {
    const key = dir.path('key.pem');
    const cert = dir.path('cert.pem');
    selfSignedEc(key, cert, '/CN=acme', 1, [
      `subjectAltName=${isIP(ip) ? 'IP' : 'DNS'}:${ip}`,
      `1.3.6.1.5.5.7.1.31=${critical ? 'critical,' : ''}DER:0420${digest.toString('hex')}`,
    ]);
    return { key: readFileSync(key), cert: readFileSync(cert) };
  } finally {
    dir.done();
  }
}

/**
 * A tls-alpn-01 responder on 127.0.0.1 (RFC 8737) offering only `acme-tls/1`. `present` swaps in
 * the certificate for an identifier and digest (openssl makes it); `critical: false` makes the
 * extension non-critical, to see it refused.
 */
export async function alpnServer(): Promise<{
  port: number;
  present(ip: string, digest: Buffer, options?: { critical?: boolean }): void;
  close(): Promise<void>;
}> {
  const server = createServer({
    ...alpnCertificate('127.0.0.1', Buffer.alloc(32), true),
    ALPNProtocols: ['acme-tls/1'],
  });
  server.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    present: (ip, digest, options = {}) =>
      server.setSecureContext(alpnCertificate(ip, digest, options.critical ?? true)),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
