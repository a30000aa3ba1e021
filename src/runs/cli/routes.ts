import type { Context, Middleware, Next } from 'koa';
import { z } from 'zod';
import { isKeelError } from '../../core/errors.js';
import { parseJson } from '../../core/json.js';
import type { Logger } from '../../core/logger.js';
import { readRawBody } from '../../http/body.js';
import type { RunsPrincipal } from '../../http/types.js';
import { runsMetadata } from '../identity/index.js';
import type { LoginCodes } from './login-codes.js';
import { OAuthError } from './login-codes.js';

/** The OAuth client terraform is, and the loopback ports its redirect listener may use. */
export const LOGIN_CLIENT = 'terraform-cli';
export const LOGIN_PORTS: readonly [number, number] = [10000, 10010];
export const AUTHORIZE_PATH = '/ui/authorize';
export const TOKEN_PATH = '/oauth/token';

/**
 * The service discovery document terraform reads from `https://HOST/.well-known/terraform.json`:
 * the runs API under every `tfe.v2*` name and `state.v2`, the login service and the message of
 * the day. Paths are relative, so they resolve against whatever address the client used.
 */
export const DISCOVERY = Object.freeze({
  'login.v1': {
    client: LOGIN_CLIENT,
    grant_types: ['authz_code'],
    authz: AUTHORIZE_PATH,
    token: TOKEN_PATH,
    ports: [...LOGIN_PORTS],
  },
  'motd.v1': '/api/terraform/motd',
  'state.v2': '/api/v2/',
  'tfe.v2': '/api/v2/',
  'tfe.v2.1': '/api/v2/',
  'tfe.v2.2': '/api/v2/',
});

export interface TerraformCliOptions {
  logger: Logger;
  bodyLimitBytes: number;
  principal(token: string): RunsPrincipal | undefined;
  codes: LoginCodes;
  /** The id of a workspace by organization and name, for `/app/ORG/WORKSPACE`. */
  workspaceId: (organization: string, name: string) => string | undefined;
}

/** A loopback `http` redirect on one of the advertised ports (RFC 8252 §7.3). */
export function loopbackRedirect(value: string): URL | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null; // not an address, so not a loopback one: the caller refuses it
  }
  const port = Number(url.port);
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'http:' || !loopback || url.username !== '' || url.password !== '')
    return null;
  if (!(port >= LOGIN_PORTS[0] && port <= LOGIN_PORTS[1])) return null;
  return url;
}

const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;
const CHALLENGE = /^[A-Za-z0-9\-_]{43}$/;

/** Where an `/app/…` address of the reference's UI lives on Keel's page (a `/ui/#/…` route). */
export function appRedirect(
  path: string,
  workspaceId: (organization: string, name: string) => string | undefined,
): string {
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .slice(1)
    .map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p; // not a valid escape: the segment as sent, which then matches nothing
      }
    });
  const enc = encodeURIComponent;
  if (parts[0] === 'settings' && parts[1] === 'tokens') return '/ui/#/tokens';
  const [org, second, third, fourth, fifth] = parts;
  // `/app/ORG/WORKSPACE/…` (what the CLI prints) and `/app/ORG/workspaces/WORKSPACE/…`.
  const rest =
    second === 'workspaces' && third !== undefined
      ? [third, fourth, fifth]
      : [second, third, fourth];
  const [workspace, section, runId] = rest;
  if (org === undefined || workspace === undefined || workspace === 'workspaces')
    return '/ui/#/workspaces';
  if (section === 'runs' && runId !== undefined) return `/ui/#/runs/${enc(runId)}`;
  const id = workspaceId(org, workspace);
  return id === undefined ? '/ui/#/workspaces' : `/ui/#/workspaces/${enc(id)}`;
}

const text = (v: string | undefined): string => v ?? '';

/** What the authorize page posts when the user approves a login: strings, each optional here. */
const approveBody = z.looseObject({
  response_type: z.string().optional(),
  client_id: z.string().optional(),
  redirect_uri: z.string().optional(),
  code_challenge: z.string().optional(),
  code_challenge_method: z.string().optional(),
  state: z.string().optional(),
});

/**
 * What the terraform CLI needs outside `/api/v2`: service discovery, the `/app/…` addresses it
 * prints, and `terraform login` (the authorize page's approval and the token endpoint).
 */
export function terraformCli(options: TerraformCliOptions): Middleware {
  const oauthAnswer = (ctx: Context, status: number, error: string, description: string) => {
    ctx.status = status;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { error, error_description: description };
  };

  /** The signed-in user approves: a code for the CLI's redirect. */
  const approve = async (ctx: Context) => {
    const bearer = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'))?.[1];
    const principal = bearer === undefined ? undefined : options.principal(bearer);
    if (principal?.kind !== 'user') {
      oauthAnswer(ctx, 401, 'access_denied', 'sign in with a user token to approve a login');
      return;
    }
    ctx.state.principal = principal;
    const raw = await readRawBody(ctx, options.bodyLimitBytes);
    const parsed = parseJson(approveBody, raw.toString('utf8') || '{}');
    if (!parsed.ok)
      throw new OAuthError('invalid_request', `the body must be a JSON object: ${parsed.error}`);
    const body = parsed.value;
    if (text(body.response_type) !== 'code')
      throw new OAuthError('invalid_request', 'response_type must be code');
    if (text(body.client_id) !== LOGIN_CLIENT)
      throw new OAuthError('invalid_client', `client_id must be ${LOGIN_CLIENT}`);
    const redirect = loopbackRedirect(text(body.redirect_uri));
    if (redirect === null)
      throw new OAuthError(
        'invalid_request',
        `redirect_uri must be http://localhost:PORT/… with PORT from ${LOGIN_PORTS[0]} to ${LOGIN_PORTS[1]}`,
      );
    if (text(body.code_challenge_method) !== 'S256' || !CHALLENGE.test(text(body.code_challenge)))
      throw new OAuthError(
        'invalid_request',
        'a code_challenge with code_challenge_method S256 is required (PKCE)',
      );
    const code = await options.codes.issue(
      {
        userId: principal.id,
        username: principal.name,
        clientId: LOGIN_CLIENT,
        redirectUri: text(body.redirect_uri),
        challenge: text(body.code_challenge),
      },
      runsMetadata(ctx),
    );
    redirect.searchParams.set('code', code);
    if (text(body.state) !== '') redirect.searchParams.set('state', text(body.state));
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { redirect_uri: redirect.toString() };
  };

  /** The CLI exchanges its code and verifier for a token (RFC 6749 §4.1.3, RFC 7636 §4.5). */
  const token = async (ctx: Context) => {
    const raw = await readRawBody(ctx, options.bodyLimitBytes);
    if (!/^application\/x-www-form-urlencoded\b/i.test(ctx.get('content-type')))
      throw new OAuthError('invalid_request', 'the body must be application/x-www-form-urlencoded');
    const form = new URLSearchParams(raw.toString('utf8'));
    // The client id comes in the body or, from Go's oauth2 package, as HTTP Basic user name.
    const basic = /^Basic\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1];
    const basicUser =
      basic === undefined
        ? ''
        : decodeURIComponent(Buffer.from(basic, 'base64').toString('utf8').split(':')[0] ?? '');
    const clientId = form.get('client_id') ?? basicUser;
    if (form.get('grant_type') !== 'authorization_code')
      throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code');
    if (clientId !== LOGIN_CLIENT)
      throw new OAuthError('invalid_client', `client_id must be ${LOGIN_CLIENT}`);
    const code = form.get('code') ?? '';
    const verifier = form.get('code_verifier') ?? '';
    const redirectUri = form.get('redirect_uri') ?? '';
    if (code === '' || redirectUri === '')
      throw new OAuthError('invalid_request', 'code and redirect_uri are required');
    if (!VERIFIER.test(verifier))
      throw new OAuthError(
        'invalid_request',
        'code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~',
      );
    const issued = await options.codes.redeem(
      { code, verifier, redirectUri, clientId },
      {
        actor: null,
        requestId: ctx.state.requestId,
        remoteAddress: ctx.request.ip || null,
      },
    );
    ctx.set('Cache-Control', 'no-store');
    ctx.set('Pragma', 'no-cache');
    ctx.body = { access_token: issued.token, token_type: 'bearer' };
  };

  return async (ctx: Context, next: Next) => {
    const { path, method } = ctx;
    const read = method === 'GET' || method === 'HEAD';
    if (path === '/.well-known/terraform.json' && read) {
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = DISCOVERY;
      return;
    }
    if (path === '/api/terraform/motd' && read) {
      ctx.body = { msg: 'Keel is ready: terraform can now plan and apply here.' };
      return;
    }
    if ((path === '/app' || path.startsWith('/app/')) && read) {
      ctx.redirect(appRedirect(path, options.workspaceId));
      return;
    }
    if (path === AUTHORIZE_PATH && read) {
      // The page is one document with hash routes: the request's query goes to its authorize view.
      ctx.redirect(`/ui/#/authorize?${ctx.querystring}`);
      return;
    }
    const oauth: ((c: Context) => Promise<void>) | undefined =
      method !== 'POST'
        ? undefined
        : path === '/oauth/authorize'
          ? approve
          : path === TOKEN_PATH
            ? token
            : undefined;
    if (oauth === undefined) {
      await next();
      return;
    }
    try {
      await oauth(ctx);
    } catch (err) {
      if (err instanceof OAuthError) {
        oauthAnswer(ctx, err.error === 'invalid_client' ? 401 : 400, err.error, err.message);
        return;
      }
      if (isKeelError(err) && err.code === 'payload_too_large') {
        oauthAnswer(ctx, 413, 'invalid_request', err.message);
        return;
      }
      options.logger.error({ err }, 'terraform login failed');
      oauthAnswer(ctx, 500, 'server_error', 'the request could not be completed');
    }
  };
}
