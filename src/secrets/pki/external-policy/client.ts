import { X509Certificate } from 'node:crypto';
import { request } from 'node:https';
import type { PeerCertificate, TLSSocket } from 'node:tls';
import { ValidationError } from '../../../core/errors.js';
import type { ExternalPolicyConfig } from './config.js';

/**
 * One consultation of the policy service: an HTTPS POST of the request document, trusted only
 * through the configured CA or pinned certificates, under one wall-clock deadline covering the
 * connection, the handshake, the headers and the body, with the body capped. Whatever goes wrong
 * is a `ConsultationFailure`; nothing is signed on a partial answer.
 */

/** The most of an answer Keel reads: a template certificate and warnings fit many times over. */
export const MAX_ANSWER_BYTES = 1 << 20;

/** The service's answer, as the reference's CIEPS response type defines it. */
export interface PolicyAnswer {
  request_uuid: string;
  error: string;
  warnings: string[];
  certificate: string;
  issuer_ref: string;
  store_certificate: boolean;
  generate_lease: boolean;
}

/** A consultation that produced no usable answer: why, in words for the caller and the log. */
export class ConsultationFailure extends ValidationError {}

const fail = (why: string): never => {
  throw new ConsultationFailure(`external policy service: ${why}`);
};

/** True when the service's certificate is one of the pinned ones (compared as DER). */
function pinned(peer: PeerCertificate, bundle: string): boolean {
  const blocks = bundle.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g);
  return (blocks ?? []).some((pem) => new X509Certificate(pem).raw.equals(peer.raw));
}

/** Sends the document; resolves with the raw answer text, or rejects with a failure. */
function post(config: ExternalPolicyConfig, body: string, clientKey: string): Promise<string> {
  const url = new URL(config.url);
  const deadlineMs = config.timeoutSeconds * 1000;
  return new Promise((resolve, reject) => {
    let settled = false;
    const done = (err: Error | undefined, text?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(text ?? '');
    };
    const req = request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ''),
        port: url.port || 443,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        servername: url.hostname.startsWith('[') ? undefined : url.hostname,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        // The configured CA alone (never the system store) — or, with only pinned leaves, the
        // chain is not judged and the certificate itself must be one of them (checked below).
        ...(config.trustedCa ? { ca: config.trustedCa } : { rejectUnauthorized: false }),
        ...(config.clientCertificates ? { cert: config.clientCertificates, key: clientKey } : {}),
        agent: false,
      },
      (res) => {
        const peer = (res.socket as TLSSocket).getPeerCertificate();
        if (config.trustedLeaves && !pinned(peer, config.trustedLeaves)) {
          res.destroy();
          done(
            new ConsultationFailure(
              'external policy service: its certificate is not one of trusted_leaf_certificate_bundle',
            ),
          );
          return;
        }
        if (res.statusCode !== 200) {
          res.destroy();
          done(
            new ConsultationFailure(
              `external policy service: answered HTTP ${res.statusCode ?? 0}`,
            ),
          );
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) {
            res.destroy();
            done(
              new ConsultationFailure(
                `external policy service: answer over ${MAX_ANSWER_BYTES} bytes`,
              ),
            );
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => done(undefined, Buffer.concat(chunks).toString('utf8')));
        res.on('error', (e) =>
          done(new ConsultationFailure(`external policy service: ${e.message}`)),
        );
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done(
        new ConsultationFailure(
          `external policy service: no answer within ${config.timeoutSeconds}s`,
        ),
      );
    }, deadlineMs);
    req.on('error', (e) => done(new ConsultationFailure(`external policy service: ${e.message}`)));
    req.end(body);
  });
}

const FIELDS = new Set([
  'request_uuid',
  'error',
  'warnings',
  'certificate',
  'issuer_ref',
  'store_certificate',
  'generate_lease',
]);

/**
 * Reads an answer as the reference does: JSON with no unknown fields, each field of its type,
 * the request's UUID echoed.
 */
export function readAnswer(text: string, uuid: string): PolicyAnswer {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return fail('the answer is not JSON');
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    return fail('the answer is not a JSON object');
  const o = json as Record<string, unknown>;
  for (const key of Object.keys(o))
    if (!FIELDS.has(key)) fail(`the answer has an unknown field ${JSON.stringify(key)}`);
  const str = (k: string): string => {
    const v = o[k] ?? '';
    return typeof v === 'string' ? v : fail(`the answer's ${k} is not a string`);
  };
  const bool = (k: string): boolean => {
    const v = o[k] ?? false;
    return typeof v === 'boolean' ? v : fail(`the answer's ${k} is not a boolean`);
  };
  const warnings = o.warnings ?? [];
  if (!Array.isArray(warnings) || warnings.some((w) => typeof w !== 'string'))
    fail("the answer's warnings are not a list of strings");
  const answer: PolicyAnswer = {
    request_uuid: str('request_uuid'),
    error: str('error'),
    warnings: warnings as string[],
    certificate: str('certificate'),
    issuer_ref: str('issuer_ref'),
    store_certificate: bool('store_certificate'),
    generate_lease: bool('generate_lease'),
  };
  if (answer.request_uuid !== uuid)
    fail(`the answer is for request ${JSON.stringify(answer.request_uuid)}, not ${uuid}`);
  return answer;
}

/** Consults the service with a request document; the answer read and checked. */
export async function consult(
  config: ExternalPolicyConfig,
  document: { request_uuid: string },
  clientKey: string,
): Promise<PolicyAnswer> {
  const text = await post(config, JSON.stringify(document), clientKey);
  return readAnswer(text, document.request_uuid);
}
