import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  createSecretKey,
  hkdfSync,
  randomBytes,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A secret as it rests inside an event: AES-256-GCM ciphertext plus an HMAC of the plaintext, so
 * `keel events` can show `hmac:<hex>` and two events can be compared without the key.
 */
export interface Sealed {
  readonly $sealed: string;
  readonly $hmac: string;
}

export const isSealed = (v: unknown): v is Sealed =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as Record<string, unknown>).$sealed === 'string' &&
  typeof (v as Record<string, unknown>).$hmac === 'string';

const VERSION = 'v1';

/**
 * A 32-byte subkey of the master key for one purpose (HKDF-SHA256, the label as its info), so no
 * two uses — sealing, display HMACs, the audit chain, its anchors — ever share a key.
 */
export function deriveKey(masterKey: Buffer, label: string): Buffer {
  if (masterKey.length !== 32) throw new Error('the seal key must be 32 bytes');
  return Buffer.from(hkdfSync('sha256', masterKey, Buffer.alloc(0), label, 32));
}

/**
 * {@link deriveKey} as a `KeyObject`, for a key used on every request. Node 24 tells a key's kind
 * by trying it as a `KeyObject`, then as a `CryptoKey`, each a thrown and caught error for a
 * `Buffer`: about 6 µs an HMAC, several times the HMAC itself. A `KeyObject` passes the first try.
 */
export const deriveSecretKey = (masterKey: Buffer, label: string): KeyObject =>
  createSecretKey(deriveKey(masterKey, label));

export class Sealer {
  readonly #encKey: KeyObject;
  readonly #macKey: KeyObject;

  constructor(masterKey: Buffer) {
    this.#encKey = deriveSecretKey(masterKey, 'keel seal enc');
    this.#macKey = deriveSecretKey(masterKey, 'keel seal mac');
  }

  seal(plain: string): Sealed {
    return { $sealed: this.encrypt(plain), $hmac: this.hmac(plain) };
  }

  unseal(sealed: Sealed): string {
    return this.decrypt(sealed.$sealed);
  }

  /** The ciphertext alone (`v1:…`): for a store that keeps one secret per column. */
  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#encKey, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return `${VERSION}:${Buffer.concat([iv, tag, ct]).toString('base64url')}`;
  }

  /** The plaintext of {@link encrypt}'s output; throws when the text was not sealed with this key. */
  decrypt(text: string): string {
    const [version, body] = text.split(':');
    if (version !== VERSION || body === undefined) throw new Error('unknown seal format');
    const raw = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.#encKey, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
  }

  /** A value that may rest sealed or (written before it was sealed) in clear, as text. */
  open(value: string | Sealed): string {
    return isSealed(value) ? this.unseal(value) : value;
  }

  /** A JSON value sealed as its text. */
  sealJson(value: unknown): Sealed {
    return this.seal(JSON.stringify(value));
  }

  /** A JSON value that may rest sealed (see {@link sealJson}) or in clear. */
  openJson(value: unknown): unknown {
    return isSealed(value) ? (JSON.parse(this.unseal(value)) as unknown) : value;
  }

  /** Keyed hash for comparing secrets without revealing them (token lookups, audit display). */
  hmac(plain: string): string {
    return createHmac('sha256', this.#macKey).update(plain, 'utf8').digest('hex');
  }

  /** Constant-time check of a candidate secret against a stored HMAC. */
  matches(candidate: string, storedHmac: string): boolean {
    return safeEqual(this.hmac(candidate), storedHmac);
  }
}

/**
 * Compares two secrets (tokens, signatures, HMACs) in time that depends only on their lengths:
 * `timingSafeEqual` on equal-length buffers, false at once when the lengths differ.
 */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * The master key: `KEEL_SEAL_KEY` (64 hex characters or base64 of 32 bytes) if given, else
 * `<data>/keyring`, created with mode 0600 on first start.
 */
export function loadSealKey(dataDir: string, fromEnv: string | undefined): Buffer {
  if (fromEnv !== undefined && fromEnv !== '') return parseKey(fromEnv, 'KEEL_SEAL_KEY');
  const path = join(dataDir, 'keyring');
  if (existsSync(path)) return parseKey(readFileSync(path, 'utf8').trim(), path);
  const key = randomBytes(32);
  writeFileSync(path, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(path, 0o600);
  return key;
}

function parseKey(text: string, source: string): Buffer {
  const key = /^[0-9a-fA-F]{64}$/.test(text)
    ? Buffer.from(text, 'hex')
    : Buffer.from(text, 'base64');
  if (key.length !== 32) throw new Error(`${source}: a seal key is 32 bytes (64 hex characters)`);
  return key;
}

/** Replace every sealed value in a JSON value by `hmac:<hex>` for display. */
export function redactSealed(value: unknown): unknown {
  if (isSealed(value)) return `hmac:${value.$hmac}`;
  if (Array.isArray(value)) return value.map(redactSealed);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactSealed(v)]));
  }
  return value;
}

/** Hex characters of a token HMAC that its index lookup compares in variable time. */
export const HMAC_LOOKUP_PREFIX = 16;

/**
 * Bounds `[low, high)` of the stored HMACs that share `hmac`'s first {@link HMAC_LOOKUP_PREFIX}
 * characters, for an index range scan: SQLite compares only that public-enough prefix; the
 * caller then compares each candidate's full HMAC with {@link safeEqual}.
 */
export function hmacLookupRange(hmac: string): [string, string] {
  const prefix = hmac.slice(0, HMAC_LOOKUP_PREFIX);
  // `g` sorts after every lower-case hex digit.
  return [prefix, `${prefix}g`];
}
