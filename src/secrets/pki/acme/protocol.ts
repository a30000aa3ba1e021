import type { Context } from 'koa';
import { isKeelError } from '../../../core/errors.js';
import type { AuditMetadata } from '../../../core/events.js';
import {
  directoryName,
  directoryOf,
  issuanceFor,
  type Directory,
  type Issuance,
} from './directory.js';
import { keyOf, parseJws, publicJwk, verifyJws, type Jws } from './jws.js';
import { AcmeProblem, malformed, otherDirectory, unauthorized } from './problem.js';
import type { AcmeAccountRow } from './projection.js';
import { accountMetadata, type AcmeService } from './service.js';

/** What an ACME handler answers. */
export interface AcmeReply {
  status?: number;
  body?: unknown;
  /** a PEM chain (the certificate URL) instead of JSON */
  pem?: string;
  location?: string;
  links?: string[];
  /** seconds the client should wait before polling again (a processing validation) */
  retryAfter?: number | undefined;
}

/** An ACME request, its JWS checked (nonce, URL, signature), and where it came from. */
export interface AcmeRequest {
  mount: string;
  dir: Directory;
  issuance: Issuance;
  /** `<cluster path>/<directory>acme`: every ACME URL of this directory starts with it */
  base: string;
  jws: Jws;
  payload: Record<string, unknown> | undefined;
  /** the signing account (kid requests), absent for jwk requests */
  account: AcmeAccountRow | undefined;
  /** the public JWK of a jwk request */
  jwk: Record<string, string> | undefined;
  meta: AuditMetadata;
  ctx: Context;
}

/** The URL prefix of a directory's ACME paths. */
export const baseUrl = (service: AcmeService, mount: string, dir: Directory): string =>
  `${service.cluster(mount).path}/${directoryName(dir)}acme`;

function sendProblem(ctx: Context, problem: AcmeProblem): void {
  ctx.status = problem.status;
  if (problem.location) ctx.set('Location', problem.location);
  ctx.body = JSON.stringify(problem.body);
  ctx.set('Content-Type', 'application/problem+json');
}

/** Headers every ACME answer carries: a fresh nonce, the directory link, no caching. */
function common(ctx: Context, service: AcmeService, base: string | undefined): void {
  ctx.set('Replay-Nonce', service.nonces.issue());
  ctx.set('Cache-Control', 'no-store');
  if (base) ctx.append('Link', `<${base}/directory>;rel="index"`);
}

function reply(ctx: Context, out: AcmeReply): void {
  ctx.status = out.status ?? 200;
  if (out.location) ctx.set('Location', out.location);
  if (out.retryAfter !== undefined) ctx.set('Retry-After', String(out.retryAfter));
  for (const link of out.links ?? []) ctx.append('Link', link);
  if (out.pem !== undefined) {
    ctx.body = out.pem;
    ctx.set('Content-Type', 'application/pem-certificate-chain');
  } else if (out.body === undefined) {
    // An empty string, not null: Koa would turn a null body into 204.
    ctx.body = ctx.status === 204 ? null : '';
  } else {
    ctx.body = JSON.stringify(out.body);
    ctx.set('Content-Type', 'application/json');
  }
}

/**
 * Runs an ACME handler with its dialect: problem documents for every error (a caller mistake
 * the engine's shared code reports as a validation error becomes `malformed`, or `badCSR` where
 * the handler says so), and the common headers on every answer, errors included.
 */
export async function acmeAnswer(
  ctx: Context,
  service: AcmeService,
  mount: string,
  run: (base: string) => AcmeReply | Promise<AcmeReply>,
): Promise<void> {
  const dir = directoryOf(ctx);
  const base = service.cluster(mount).path ? baseUrl(service, mount, dir) : undefined;
  common(ctx, service, base);
  try {
    reply(ctx, await run(base ?? ''));
  } catch (err) {
    if (err instanceof AcmeProblem) return sendProblem(ctx, err);
    if (isKeelError(err) && err.code !== 'internal') {
      const status = err.code === 'conflict' || err.code === 'illegal_transition' ? 409 : 400;
      return sendProblem(ctx, new AcmeProblem('malformed', err.message, status));
    }
    service.logger.error({ err }, 'ACME request failed');
    sendProblem(ctx, new AcmeProblem('serverInternal', 'the server failed to handle the request'));
  }
}

/**
 * A JWS-authenticated ACME path (RFC 8555 §6.2–6.3). `key` says which key the JWS must name:
 * `jwk` (new-account), `kid` (everything an account does) or `either` (revoke-cert).
 */
export function acmePost(
  service: AcmeService,
  mount: string,
  key: 'jwk' | 'kid' | 'either',
  handler: (req: AcmeRequest) => AcmeReply | Promise<AcmeReply>,
) {
  return (ctx: Context) =>
    acmeAnswer(ctx, service, mount, async (base) => {
      const dir = directoryOf(ctx);
      const issuance = issuanceFor(service, mount, dir);
      // RFC 8555 §6.2: a JWS body is application/jose+json, and nothing else is read.
      if (ctx.request.type !== 'application/jose+json')
        throw new AcmeProblem(
          'malformed',
          `the Content-Type must be application/jose+json, not ${JSON.stringify(ctx.request.type)}`,
          415,
        );
      const jws = parseJws(ctx.request.rawBody);
      const h = jws.protected;
      if (typeof h.nonce !== 'string' || !service.nonces.consume(h.nonce))
        throw new AcmeProblem('badNonce', 'the nonce is missing, expired or already used');
      const expectedUrl = `${service.cluster(mount).path}${ctx.newRouterPath ?? ''}`;
      if (h.url !== expectedUrl)
        throw unauthorized(
          `the JWS url ${JSON.stringify(h.url)} is not the request's URL ${expectedUrl}`,
        );
      if ((h.jwk === undefined) === (h.kid === undefined))
        throw malformed('the protected header must have exactly one of jwk and kid');
      const requestId = (ctx.state.requestId as string | undefined) ?? null;
      const remote = ctx.request.ip || null;
      const request = { mount, dir, issuance, base, jws, payload: jws.payload, ctx };
      if (h.jwk !== undefined) {
        if (key === 'kid') throw malformed('this request must be signed with an account (kid)');
        const jwk = publicJwk(h.jwk);
        await verifyJws(jws, keyOf(jwk));
        return handler({
          ...request,
          account: undefined,
          jwk,
          meta: { actor: { accessor: 'acme', name: 'acme' }, requestId, remoteAddress: remote },
        });
      }
      if (key === 'jwk') throw malformed('this request must carry the account key (jwk)');
      const prefix = `${base}/account/`;
      const kid = String(h.kid);
      const accountId = kid.startsWith(prefix) ? kid.slice(prefix.length) : '';
      const signer = accountId ? service.q.account(mount, accountId) : undefined;
      if (!signer) throw new AcmeProblem('accountDoesNotExist', 'the account does not exist');
      await verifyJws(jws, keyOf(JSON.parse(signer.jwk) as Record<string, string>));
      // Decide on the account as it is after the wait, and only if its key is still the one checked.
      const account = service.q.account(mount, accountId);
      if (!account || account.jwk !== signer.jwk)
        throw unauthorized('the account key changed while the request was verified');
      if (account.status !== 'valid') throw unauthorized(`the account is ${account.status}`);
      // An account acts only through the directory it was made through (its events record it).
      if (account.directory !== directoryName(dir)) throw otherDirectory();
      if (service.config(mount).eab_policy === 'always-required' && !account.eab_id)
        throw new AcmeProblem(
          'externalAccountRequired',
          'the eab_policy requires accounts bound to an external account',
        );
      return handler({
        ...request,
        account,
        jwk: undefined,
        meta: accountMetadata(account.account_id, requestId, remote),
      });
    });
}

/**
 * Runs a handler that changes state as one certificate authority command (DESIGN §10), on the
 * signing account as it is when the command is decided: the checks of `acmePost` ran before the
 * command was queued, and a command ahead of it may have deactivated the account or changed its key.
 */
export function acmeCommand(
  service: AcmeService,
  req: AcmeRequest,
  handler: (req: AcmeRequest) => AcmeReply,
): Promise<AcmeReply> {
  return service.authority.run(() => {
    if (!req.account) return handler(req);
    const account = service.q.account(req.mount, req.account.account_id);
    if (!account || account.jwk !== req.account.jwk)
      throw unauthorized('the account key changed while the request was verified');
    if (account.status !== 'valid') throw unauthorized(`the account is ${account.status}`);
    return handler({ ...req, account });
  });
}

/** The payload must be empty: POST-as-GET (RFC 8555 §6.3). */
export function asGet(req: AcmeRequest): void {
  if (req.payload !== undefined)
    throw malformed('this resource is read with POST-as-GET (an empty payload)');
}

/** The account of a kid request (acmePost guarantees it for kid routes). */
export function accountOf(req: AcmeRequest): AcmeAccountRow {
  if (!req.account) throw malformed('this request must be signed with an account (kid)');
  return req.account;
}
