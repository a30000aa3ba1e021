/**
 * The floor server: the least any server could do for the two writes the targets are set on,
 * with nothing of Keel but its DER encoder. `node:http` without a framework; a token compared
 * with one string; the body parsed and trusted; one SQLite transaction per request (a hash-chained
 * event row and one read-model row, WAL, synchronous=NORMAL, checkpoints on Keel's worker); the
 * answer written with `JSON.stringify`. No validation, access rules, machine, audit metadata,
 * policy or further read models. Its rate is what this machine allows a Node process for the
 * work; a target above it cannot be met by doing that work better, only by doing less of it.
 *
 * - `POST /runs`: creates a run (JSON:API request and answer of the runs API's shape);
 *   `POST /runs/batched` does the same with group commit: the requests read in one turn of the
 *   event loop share a transaction, and each is answered once it has committed.
 * - `POST /issue`: issues an EC P-256 leaf with a fresh key, as `pki/issue/:role` answers it.
 *
 * Runs as a child process (`tsx bench/floor.ts DATA_DIR`) and reports `{url, token}` over IPC.
 */
import { createECDH, createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Checkpointer } from '../src/core/checkpointer.js';
import * as der from '../src/x509/der.js';
import {
  buildCertificate,
  encodeName,
  pem,
  randomSerial,
  serialText,
} from '../src/x509/certificate.js';
import { curveOf, ecPrivateDer, ecSpki } from '../src/x509/key-der.js';
import { signatureScheme, spkiDer } from '../src/x509/keys.js';

const TOKEN = 'floor-token';

interface Write {
  stream: string;
  data: string;
  row: () => void;
}

function openLog(dataDir: string) {
  const db = new Database(join(dataDir, 'floor.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  const checkpointer = Checkpointer.start(db);
  db.exec(`
    CREATE TABLE events (position INTEGER PRIMARY KEY, stream TEXT NOT NULL,
      version INTEGER NOT NULL, data TEXT NOT NULL, hash BLOB NOT NULL, UNIQUE (stream, version));
    CREATE TABLE runs (id TEXT PRIMARY KEY, workspace TEXT NOT NULL, status TEXT NOT NULL,
      created_at TEXT NOT NULL);
    CREATE INDEX runs_by_workspace ON runs (workspace, created_at);
    CREATE TABLE certs (serial TEXT PRIMARY KEY, der BLOB NOT NULL, not_after INTEGER NOT NULL);
  `);
  const insertEvent = db.prepare(
    'INSERT INTO events (stream, version, data, hash) VALUES (?, 1, ?, ?)',
  );
  let last = Buffer.alloc(32);
  const write = (w: Write) => {
    const hash = createHash('sha256').update(last).update(w.data).digest();
    insertEvent.run(w.stream, w.data, hash);
    w.row();
    last = hash;
  };
  /** One transaction per request: the chained event, then the read-model row. */
  const appendOne = db.transaction(write);
  const append = (w: Write): Promise<void> => {
    appendOne(w);
    return Promise.resolve();
  };
  /** Group commit: the writes of the requests read in one turn of the event loop share a transaction. */
  const appendAll = db.transaction((writes: readonly Write[]) => writes.forEach(write));
  let batch: { write: Write; done: () => void }[] = [];
  const appendBatched = (w: Write): Promise<void> =>
    new Promise((resolve) => {
      if (batch.push({ write: w, done: resolve }) > 1) return;
      setImmediate(() => {
        const taken = batch;
        batch = [];
        appendAll(taken.map((b) => b.write));
        for (const b of taken) b.done();
      });
    });
  return { db, checkpointer, append, appendBatched };
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function reply(res: ServerResponse, status: number, type: string, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function serve(dataDir: string): Promise<void> {
  const { db, checkpointer, append, appendBatched } = openLog(dataDir);
  const insertRun = db.prepare(
    'INSERT INTO runs (id, workspace, status, created_at) VALUES (?, ?, ?, ?)',
  );
  const insertCert = db.prepare('INSERT INTO certs (serial, der, not_after) VALUES (?, ?, ?)');

  const createRun = async (body: Buffer, commit: (w: Write) => Promise<void>): Promise<unknown> => {
    const request = JSON.parse(body.toString('utf8')) as {
      data: { relationships: { workspace: { data: { id: string } } } };
    };
    const workspace = request.data.relationships.workspace.data.id;
    const id = `run-${randomBytes(12).toString('base64url')}`;
    const now = new Date().toISOString();
    const attributes = {
      actions: {
        'is-cancelable': true,
        'is-confirmable': false,
        'is-discardable': false,
        'is-force-cancelable': false,
      },
      'allow-empty-apply': false,
      'auto-apply': false,
      'canceled-at': null,
      'created-at': now,
      'has-changes': false,
      'is-destroy': false,
      message: 'Queued manually via the API',
      permissions: {
        'can-apply': true,
        'can-cancel': true,
        'can-comment': true,
        'can-discard': true,
        'can-force-cancel': true,
        'can-force-execute': true,
        'can-override-policy-check': true,
      },
      'plan-only': false,
      refresh: true,
      'refresh-only': false,
      'replace-addrs': null,
      'save-plan': false,
      source: 'tfe-api',
      status: 'pending',
      'status-timestamps': { 'plan-queueable-at': now },
      'target-addrs': null,
      'trigger-reason': 'manual',
      variables: [],
    };
    await commit({
      stream: id,
      data: JSON.stringify({ type: 'RunCreated', id, workspace, attributes }),
      row: () => insertRun.run(id, workspace, 'pending', now),
    });
    return {
      data: {
        id,
        type: 'runs',
        attributes,
        relationships: { workspace: { data: { id: workspace, type: 'workspaces' } } },
        links: { self: `/api/v2/runs/${id}` },
      },
    };
  };

  const curve = curveOf(256)!;
  const scheme = signatureScheme({ type: 'ec', bits: 256 });
  const ca = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const caName = encodeName({ commonName: 'Floor Root' });
  const caPem = pem(
    'CERTIFICATE',
    buildCertificate({
      serial: randomSerial(),
      issuer: caName,
      subject: caName,
      notBefore: new Date(),
      notAfter: new Date(Date.now() + 365 * 86_400_000),
      spki: spkiDer(ca.publicKey),
      extensions: [],
      scheme,
      signingKey: ca.privateKey,
    }),
  );
  const ecdh = createECDH('prime256v1');

  const issue = async (body: Buffer): Promise<unknown> => {
    const { common_name: name } = JSON.parse(body.toString('utf8')) as { common_name: string };
    const point = ecdh.generateKeys();
    const privateKey = ecPrivateDer(curve, ecdh.getPrivateKey(), point, false);
    const serial = randomSerial();
    const now = Date.now();
    const notAfter = new Date(now + 3_600_000);
    const leaf = buildCertificate({
      serial,
      issuer: caName,
      subject: encodeName({ commonName: name }),
      notBefore: new Date(now - 30_000),
      notAfter,
      spki: ecSpki(curve, point),
      extensions: [
        der.seq(der.oid('2.5.29.17'), der.octets(der.seq(der.tlv(0x82, Buffer.from(name))))),
      ],
      scheme,
      signingKey: ca.privateKey,
    });
    const serialNumber = serialText(serial);
    const event = { type: 'CertificateIssued', serial: serialNumber, der: leaf.toString('base64') };
    await append({
      stream: `cert-${serialNumber}`,
      data: JSON.stringify(event),
      row: () => insertCert.run(serialNumber, leaf, notAfter.getTime()),
    });
    return {
      request_id: randomUUID(),
      lease_id: '',
      renewable: false,
      lease_duration: 0,
      data: {
        certificate: pem('CERTIFICATE', leaf),
        issuing_ca: caPem,
        ca_chain: [caPem],
        private_key: pem('EC PRIVATE KEY', privateKey),
        private_key_type: 'ec',
        serial_number: serialNumber,
        expiration: Math.floor(notAfter.getTime() / 1000),
      },
      wrap_info: null,
      warnings: null,
      auth: null,
    };
  };

  const server = createServer((req, res) => {
    void readBody(req).then(async (body) => {
      if (req.method === 'POST' && (req.url === '/runs' || req.url === '/runs/batched')) {
        if (req.headers.authorization !== `Bearer ${TOKEN}`)
          return reply(res, 401, 'text/plain', '');
        const commit = req.url === '/runs' ? append : appendBatched;
        return reply(res, 201, 'application/vnd.api+json', await createRun(body, commit));
      }
      if (req.method === 'POST' && req.url === '/issue') {
        if (req.headers['x-vault-token'] !== TOKEN) return reply(res, 403, 'text/plain', '');
        return reply(res, 200, 'application/json', await issue(body));
      }
      return reply(res, 404, 'text/plain', '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  process.send?.({ url: `http://127.0.0.1:${port}`, token: TOKEN });
  process.on('SIGTERM', () => {
    server.close();
    void checkpointer.stop().then(() => {
      db.close();
      process.exit(0);
    });
  });
}

const dataDir = process.argv[2];
if (dataDir === undefined) throw new Error('usage: floor.ts DATA_DIR');
await serve(dataDir);
