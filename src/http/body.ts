import type { Context } from 'koa';
import { KeelError, ValidationError } from '../core/errors.js';

/** Read the request body, refusing more than `limit` bytes with a typed error. */
export async function readRawBody(ctx: Context, limit: number): Promise<Buffer> {
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) throw tooLarge(limit);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) {
      ctx.req.resume();
      throw tooLarge(limit);
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

const tooLarge = (limit: number) =>
  new KeelError('payload_too_large', `request body is larger than the limit of ${limit} bytes`, {
    title: 'payload too large',
  });

export type BodyDialect = 'jsonapi' | 'vault';

const JSON_TYPES = /^application\/(vnd\.api\+json|json|[\w.+-]+\+json)$/;

/**
 * Parse a body for one of the two surfaces. JSON:API wants a JSON content type (anything else
 * with a body is 415); the secrets API, like the reference, reads JSON whatever the content type
 * and also accepts a form.
 */
export function parseBody(raw: Buffer, contentType: string, dialect: BodyDialect): unknown {
  if (raw.length === 0) return undefined;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  // An OCSP request is DER; the responder reads `ctx.request.rawBody`, as the reference passes it.
  if (dialect === 'vault' && type === 'application/ocsp-request') return undefined;
  if (dialect === 'vault' && type === 'application/x-www-form-urlencoded' && !looksLikeJson(raw)) {
    return Object.fromEntries(new URLSearchParams(raw.toString('utf8')));
  }
  if (dialect === 'jsonapi' && !JSON_TYPES.test(type)) {
    throw new KeelError(
      'unsupported_media_type',
      `content type ${type === '' ? '(none)' : JSON.stringify(type)} is not supported; send application/vnd.api+json`,
      { title: 'unsupported media type' },
    );
  }
  if (jsonDepth(raw) > MAX_JSON_DEPTH) {
    throw new ValidationError(`request body nests deeper than ${MAX_JSON_DEPTH} levels`, {
      status: 400,
      title: 'bad request',
    });
  }
  try {
    return JSON.parse(raw.toString('utf8')) as unknown;
  } catch (err) {
    const detail = err instanceof Error ? err.message : String(err);
    // The reference answers exactly this, without the parser's detail.
    if (dialect === 'vault') throw new ValidationError('error parsing JSON');
    throw new ValidationError(`malformed JSON body: ${detail}`, {
      title: 'malformed request body',
    });
  }
}

/**
 * The deepest nesting of arrays and objects a body may have. Every API body is a few levels deep;
 * past this, walking the value recursively (sorting keys, sealing, validating) could overflow the
 * stack, so such a body is refused before it is parsed.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * How deeply the arrays and objects of a JSON text nest, counted in one pass over its bytes
 * without parsing (brackets inside strings do not count). UTF-8 continuation bytes never equal an
 * ASCII bracket or quote, so the bytes can be read as they are.
 */
export function jsonDepth(raw: Uint8Array): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < raw.length; i++) {
    const byte = raw[i]!;
    if (inString) {
      if (byte === 0x5c)
        i++; // a backslash escapes the next byte
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x5b || byte === 0x7b) {
      depth++;
      if (depth > deepest) deepest = depth;
    } else if (byte === 0x5d || byte === 0x7d) depth--;
  }
  return deepest;
}

/**
 * The reference sniffs the body: a form content type whose body starts (after whitespace) with
 * `{` or `[` is still JSON, so `curl -d '{…}'` works.
 */
function looksLikeJson(raw: Buffer): boolean {
  for (const byte of raw.subarray(0, 512)) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}
