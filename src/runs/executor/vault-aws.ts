import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve as resolvePath } from 'node:path';
import { rootCertificates } from 'node:tls';
import { z } from 'zod';
import type { Core } from '../../context.js';
import { checkJson, type JsonResult } from '../../core/json.js';
import type { RunsModel } from '../model.js';
import { identityTokens } from '../oidc/claims.js';
import type { OidcIssuer } from '../oidc/keys.js';
import type { ExecutorPort, Phase, PhaseIo } from './service.js';
import type { WorkspaceVariable } from './types.js';

/**
 * Vault-backed dynamic AWS credentials, as the reference gives a run's phases, with Keel itself as
 * the Vault: a workspace whose environment variables say `TFC_VAULT_BACKED_AWS_AUTH=true` gets, in
 * each plan and apply on the command engine, short-lived AWS credentials in
 * `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`. The phase's workload
 * identity token (audience `TFC_VAULT_WORKLOAD_IDENTITY_AUDIENCE`) logs in to the JWT auth method
 * at `TFC_VAULT_AUTH_PATH` with the role `TFC_VAULT_RUN_ROLE`; the token that login gives reads
 * credentials of the AWS role `TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE` from the engine at
 * `TFC_VAULT_BACKED_AWS_MOUNT_PATH` (`creds/` for `iam_user`, `sts/` for `assumed_role` and
 * `federation_token`). The same keys are in a shared credentials file the reference's Terraform
 * variable `tfc_vault_backed_aws_dynamic_credentials` names. When the phase ends, the file is
 * removed and that token revoked, and with it the lease (its IAM user deleted). Every step is a
 * request to the Vault API, so each is in the audit log.
 *
 * Anything missing or not served fails the phase before terraform starts, naming it.
 */

export const AUTH_TYPES = ['iam_user', 'assumed_role', 'federation_token'] as const;
export type AwsAuthType = (typeof AUTH_TYPES)[number];

export interface VaultAwsSettings {
  /** Vault's address: `TFC_VAULT_ADDR`, or Keel's own public address. */
  addr: string;
  authPath: string;
  runRole: string;
  audience: string;
  mount: string;
  awsRole: string;
  authType: AwsAuthType;
  roleArn: string | null;
  /** PEM certificates to trust for `addr` (`TFC_VAULT_ENCODED_CACERT`), besides the system's. */
  ca: string | null;
  /**
   * Seconds to wait once the credentials are read, before terraform starts
   * (`TFC_VAULT_BACKED_AWS_SLEEP_SECONDS`): a new IAM user's keys take a while to work in AWS.
   */
  sleepSeconds: number;
}

/** The longest wait `TFC_VAULT_BACKED_AWS_SLEEP_SECONDS` may ask for: a day. */
export const MAX_SLEEP_SECONDS = 86_400;

/** A phase's configuration is wrong or asks for what Keel does not serve. */
export class VaultAwsError extends Error {
  constructor(message: string) {
    super(`Vault-backed AWS credentials: ${message}`);
  }
}

const PREFIX = /^TFC_VAULT_/;
/** The variables Keel reads; any other `TFC_VAULT_*` variable is refused by name. */
const KNOWN = new Set([
  'TFC_VAULT_BACKED_AWS_AUTH',
  'TFC_VAULT_BACKED_AWS_AUTH_TYPE',
  'TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE',
  'TFC_VAULT_BACKED_AWS_MOUNT_PATH',
  'TFC_VAULT_BACKED_AWS_RUN_ROLE_ARN',
  'TFC_VAULT_BACKED_AWS_SLEEP_SECONDS',
  'TFC_VAULT_RUN_ROLE',
  'TFC_VAULT_AUTH_PATH',
  'TFC_VAULT_ADDR',
  'TFC_VAULT_NAMESPACE',
  'TFC_VAULT_WORKLOAD_IDENTITY_AUDIENCE',
  'TFC_VAULT_ENCODED_CACERT',
  // The reference's Vault provider credentials: a separate feature, refused below if turned on.
  'TFC_VAULT_PROVIDER_AUTH',
]);

/** The settings a phase's variables ask for, or null when Vault-backed AWS auth is off. */
export function vaultAwsSettings(
  variables: readonly WorkspaceVariable[],
  keelAddress: string,
): VaultAwsSettings | null {
  const env = new Map(variables.filter((v) => v.category === 'env').map((v) => [v.key, v.value]));
  if (env.get('TFC_VAULT_BACKED_AWS_AUTH')?.toLowerCase() !== 'true') return null;
  for (const key of env.keys()) {
    if (PREFIX.test(key) && !KNOWN.has(key))
      throw new VaultAwsError(
        `${key} is not supported by Keel (provider aliases and other Vault-backed clouds are not served)`,
      );
  }
  if (env.get('TFC_VAULT_PROVIDER_AUTH')?.toLowerCase() === 'true')
    throw new VaultAwsError(
      'TFC_VAULT_PROVIDER_AUTH (Vault provider credentials) is not supported by Keel',
    );
  const namespace = env.get('TFC_VAULT_NAMESPACE') ?? '';
  if (namespace !== '')
    throw new VaultAwsError(
      `TFC_VAULT_NAMESPACE is not supported: Keel has no Vault namespaces (got ${JSON.stringify(namespace)})`,
    );
  const required = (key: string): string => {
    const value = env.get(key)?.trim() ?? '';
    if (value === '') throw new VaultAwsError(`${key} is required`);
    return value;
  };
  const authType = required('TFC_VAULT_BACKED_AWS_AUTH_TYPE');
  if (!(AUTH_TYPES as readonly string[]).includes(authType))
    throw new VaultAwsError(
      `TFC_VAULT_BACKED_AWS_AUTH_TYPE must be one of ${AUTH_TYPES.join(', ')}, got ${JSON.stringify(authType)}`,
    );
  const path = (key: string, fallback: string): string => {
    const value = (env.get(key) ?? fallback).replace(/^\/+|\/+$/g, '');
    const segments = value.split('/');
    if (segments.some((p) => !/^[A-Za-z0-9_.-]+$/.test(p) || /^\.+$/.test(p)))
      throw new VaultAwsError(`${key} is not a mount path: ${JSON.stringify(value)}`);
    return value;
  };
  const addr = (env.get('TFC_VAULT_ADDR') ?? '').trim() || keelAddress;
  try {
    const url = new URL(addr);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error('not http');
  } catch {
    throw new VaultAwsError(`TFC_VAULT_ADDR is not an http(s) address: ${JSON.stringify(addr)}`);
  }
  const encoded = env.get('TFC_VAULT_ENCODED_CACERT') ?? '';
  const sleep = env.get('TFC_VAULT_BACKED_AWS_SLEEP_SECONDS')?.trim() ?? '';
  if (sleep !== '' && (!/^\d+$/.test(sleep) || Number(sleep) > MAX_SLEEP_SECONDS))
    throw new VaultAwsError(
      `TFC_VAULT_BACKED_AWS_SLEEP_SECONDS must be a whole number of seconds from 0 to ${MAX_SLEEP_SECONDS}, got ${JSON.stringify(sleep)}`,
    );
  return {
    addr: addr.replace(/\/+$/, ''),
    authPath: path('TFC_VAULT_AUTH_PATH', 'jwt'),
    runRole: required('TFC_VAULT_RUN_ROLE'),
    audience: env.get('TFC_VAULT_WORKLOAD_IDENTITY_AUDIENCE') || 'vault.workload.identity',
    mount: path('TFC_VAULT_BACKED_AWS_MOUNT_PATH', 'aws'),
    awsRole: required('TFC_VAULT_BACKED_AWS_RUN_VAULT_ROLE'),
    authType: authType as AwsAuthType,
    roleArn: env.get('TFC_VAULT_BACKED_AWS_RUN_ROLE_ARN') || null,
    ca: encoded === '' ? null : Buffer.from(encoded, 'base64').toString('utf8'),
    sleepSeconds: sleep === '' ? 0 : Number(sleep),
  };
}

/** Waits `ms`; a stop meanwhile rejects with its reason at once. */
function pause(ms: number, stopped: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (stopped?.aborted === true) {
      reject(stopped.reason as Error);
      return;
    }
    const onStop = () => {
      clearTimeout(timer);
      reject(stopped?.reason as Error);
    };
    const timer = setTimeout(() => {
      stopped?.removeEventListener('abort', onStop);
      resolve();
    }, ms);
    stopped?.addEventListener('abort', onStop, { once: true });
  });
}

interface VaultAnswer {
  status: number;
  /** The answer's JSON, unchecked: each caller reads it with the schema of what it asked for. */
  body: unknown;
}

/** What a Vault answers a refused request with. */
const vaultErrors = z.looseObject({ errors: z.array(z.unknown()).min(1) });

/** What a JWT login answers: the token the phase reads its credentials with. */
const loginAnswer = z.looseObject({ auth: z.looseObject({ client_token: z.string() }) });

/** What `creds/` and `sts/` answer: the keys, under a lease. */
const credsAnswer = z.looseObject({
  lease_id: z.string(),
  data: z.looseObject({
    access_key: z.string(),
    secret_key: z.string(),
    security_token: z.string().nullable().optional(),
    session_token: z.string().nullable().optional(),
  }),
});

/** One Vault API call; never follows redirects. */
function vaultCall(
  settings: VaultAwsSettings,
  ca: readonly string[] | null,
  method: string,
  path: string,
  token: string | null,
  body?: unknown,
): Promise<VaultAnswer> {
  const url = new URL(`${settings.addr}/v1/${path}`);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const headers: Record<string, string> = {
    ...(payload === undefined ? {} : { 'content-type': 'application/json' }),
    ...(token === null ? {} : { 'x-vault-token': token }),
  };
  return new Promise((resolve, reject) => {
    const done = (res: IncomingMessage) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = text === '' ? {} : JSON.parse(text);
        } catch {
          parsed = { errors: [text.slice(0, 200)] };
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    };
    const req =
      url.protocol === 'https:'
        ? httpsRequest(url, { method, headers, ...(ca === null ? {} : { ca: [...ca] }) }, done)
        : httpRequest(url, { method, headers }, done);
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer from ${url.origin}`)));
    req.on('error', reject);
    req.end(payload);
  });
}

const errorsOf = (a: VaultAnswer): string => {
  const refused = vaultErrors.safeParse(a.body);
  return refused.success ? refused.data.errors.map(String).join('; ') : `HTTP ${a.status}`;
};

/** Why a call failed: Vault's errors when it refused, otherwise what in its answer does not fit. */
const whyNot = (a: VaultAnswer, fit: JsonResult<unknown>): string =>
  a.status >= 300 || fit.ok ? errorsOf(a) : `the answer does not fit: ${fit.error}`;

/** What one phase holds: the Vault token its credentials were read with. */
interface Held {
  settings: VaultAwsSettings;
  ca: readonly string[] | null;
  token: string;
  leaseId: string;
  /** The directory of the phase's shared credentials file, removed when the phase ends. */
  dir: string | null;
}

/**
 * The reference's Terraform variable for provider configurations: the shared credentials file of
 * the default credentials (`aliases` stays empty: Keel serves no tagged aliases). A configuration
 * that declares it can point a provider's `shared_credentials_files` at it.
 */
export const DYNAMIC_CREDENTIALS_VARIABLE = 'tfc_vault_backed_aws_dynamic_credentials';

/**
 * A private directory of the run under Keel's data directory, holding an AWS shared credentials
 * file with the keys. The path is the same for the run's plan and apply: terraform applies a plan
 * with the variable values the plan was made with.
 */
function credentialsFile(
  dataDir: string,
  runId: string,
  keys: { id: string; secret: string; session: string | null },
): { dir: string; file: string } {
  const dir = resolvePath(dataDir, 'phase-credentials', runId);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, 'credentials');
  writeFileSync(
    file,
    [
      '[default]',
      `aws_access_key_id = ${keys.id}`,
      `aws_secret_access_key = ${keys.secret}`,
      ...(keys.session === null ? [] : [`aws_session_token = ${keys.session}`]),
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return { dir, file };
}

export interface VaultBackedAws {
  /** The phase's credentials as environment variables (none when the workspace asks for none). */
  obtain(
    variables: readonly WorkspaceVariable[],
    phase: { runId: string; phase: Phase },
    driver: 'builtin' | 'command',
    /** The phase's log, and its cancel, which cuts the wait after the credentials short. */
    io?: PhaseIo,
  ): Promise<WorkspaceVariable[]>;
  /** The phase ended: revoke its Vault token, and so its lease. Never throws. */
  release(runId: string, phase: Phase): Promise<void>;
  /** Lease ids held by phases now (tests). */
  held(): string[];
}

export function vaultBackedAws(
  core: Core,
  model: RunsModel,
  issuer: OidcIssuer,
  /** Keel's own listener certificates, trusted when Vault is Keel's own address. */
  listener: (() => { origin: string; ca: string[] }) | null,
): VaultBackedAws {
  const phases = new Map<string, Held>();
  const key = (runId: string, phase: Phase) => `${runId}:${phase}`;
  const trustFor = (settings: VaultAwsSettings): readonly string[] | null => {
    const own = listener?.();
    const extra = [
      ...(settings.ca === null ? [] : [settings.ca]),
      ...(own !== undefined && own.origin === new URL(settings.addr).origin ? own.ca : []),
    ];
    return extra.length === 0 ? null : [...rootCertificates, ...extra];
  };
  const revoke = async (held: Held): Promise<void> => {
    try {
      const res = await vaultCall(
        held.settings,
        held.ca,
        'POST',
        'auth/token/revoke-self',
        held.token,
      );
      if (res.status >= 300)
        core.logger.warn(
          { lease: held.leaseId, status: res.status, errors: errorsOf(res) },
          'revoking a phase’s Vault token failed; its lease ends with its TTL',
        );
    } catch (err) {
      core.logger.warn({ err, lease: held.leaseId }, 'revoking a phase’s Vault token failed');
    }
  };

  return {
    async obtain(variables, phase, driver, io) {
      const settings = vaultAwsSettings(variables, core.config.publicAddress);
      if (settings === null) return [];
      if (driver !== 'command')
        throw new VaultAwsError(
          'they reach terraform only on the command engine (the builtin engine runs no provider); set the workspace execution-engine to a terraform binary',
        );
      const [identity] = await identityTokens(
        model,
        issuer,
        [
          {
            key: 'TFC_WORKLOAD_IDENTITY_AUDIENCE',
            value: settings.audience,
            category: 'env',
            hcl: false,
            sensitive: false,
          },
        ],
        phase,
      );
      if (identity === undefined) throw new VaultAwsError(`run ${phase.runId} not found`);
      const ca = trustFor(settings);
      const call = async (method: string, path: string, token: string | null, body?: unknown) => {
        try {
          return await vaultCall(settings, ca, method, path, token, body);
        } catch (err) {
          throw new VaultAwsError(`${settings.addr}/v1/${path}: ${(err as Error).message}`);
        }
      };
      const login = await call('POST', `auth/${settings.authPath}/login`, null, {
        role: settings.runRole,
        jwt: identity.value,
      });
      const loggedIn = checkJson(loginAnswer, login.body);
      if (login.status >= 300 || !loggedIn.ok)
        throw new VaultAwsError(
          `login at auth/${settings.authPath} with role ${settings.runRole} failed: ${whyNot(login, loggedIn)}`,
        );
      const token = loggedIn.value.auth.client_token;
      try {
        const read =
          settings.authType === 'iam_user'
            ? await call('GET', `${settings.mount}/creds/${settings.awsRole}`, token)
            : await call('POST', `${settings.mount}/sts/${settings.awsRole}`, token, {
                ...(settings.roleArn === null ? {} : { role_arn: settings.roleArn }),
              });
        const creds = checkJson(credsAnswer, read.body);
        if (read.status >= 300 || !creds.ok)
          throw new VaultAwsError(
            `reading ${settings.authType} credentials of role ${settings.awsRole} at ${settings.mount} failed: ${whyNot(read, creds)}`,
          );
        const { data, lease_id: leaseId } = creds.value;
        const raw = data.security_token ?? data.session_token;
        const session = typeof raw === 'string' && raw !== '' ? raw : null;
        // As the reference's agent does: the keys reach terraform once the wait is over. A cancel
        // meanwhile revokes them (below) and the phase ends canceled.
        if (settings.sleepSeconds > 0) {
          io?.log(
            `Waiting ${settings.sleepSeconds} s before terraform starts (TFC_VAULT_BACKED_AWS_SLEEP_SECONDS).`,
          );
          await pause(settings.sleepSeconds * 1000, io?.stopped);
        }
        const { dir, file } = credentialsFile(core.config.dataDir, phase.runId, {
          id: data.access_key,
          secret: data.secret_key,
          session,
        });
        phases.set(key(phase.runId, phase.phase), { settings, ca, token, leaseId, dir });
        const env = (k: string, value: string): WorkspaceVariable => ({
          key: k,
          value,
          category: 'env',
          hcl: false,
          sensitive: true,
        });
        return [
          env('AWS_ACCESS_KEY_ID', data.access_key),
          env('AWS_SECRET_ACCESS_KEY', data.secret_key),
          ...(session === null ? [] : [env('AWS_SESSION_TOKEN', session)]),
          {
            key: `TF_VAR_${DYNAMIC_CREDENTIALS_VARIABLE}`,
            value: `{default={shared_credentials_file=${JSON.stringify(file)}},aliases={}}`,
            category: 'env',
            hcl: false,
            sensitive: false,
          },
        ];
      } catch (err) {
        // Nothing is handed out: the login's token (and anything it got) goes now.
        await revoke({ settings, ca, token, leaseId: '', dir: null });
        throw err;
      }
    },
    async release(runId, phase) {
      const held = phases.get(key(runId, phase));
      if (held === undefined) return;
      phases.delete(key(runId, phase));
      if (held.dir !== null) rmSync(held.dir, { recursive: true, force: true });
      await revoke(held);
    },
    held: () => [...phases.values()].map((h) => h.leaseId),
  };
}

/**
 * The port with Vault-backed AWS credentials: a phase's variables get them as it starts, and
 * whichever way the phase ends (finished, errored, canceled) they are revoked once its outcome is
 * recorded. A phase lost to a stop or another process keeps them until their TTL.
 */
export function withVaultBackedAws(
  port: ExecutorPort,
  vault: VaultBackedAws,
  driverOf: (workspaceId: string) => 'builtin' | 'command',
): ExecutorPort {
  const ending = async <T>(runId: string, phase: Phase, outcome: () => Promise<T>): Promise<T> => {
    try {
      return await outcome();
    } finally {
      await vault.release(runId, phase);
    }
  };
  return {
    ...port,
    async workspaceVariables(workspaceId, phase, io) {
      const variables = await port.workspaceVariables(workspaceId, phase, io);
      if (phase === undefined) return variables;
      const creds = await vault.obtain(variables, phase, driverOf(workspaceId), io);
      if (creds.length === 0) return variables;
      const names = new Set(creds.map((c) => c.key));
      return [...variables.filter((v) => v.category !== 'env' || !names.has(v.key)), ...creds];
    },
    planFinished: (runId, result) => ending(runId, 'plan', () => port.planFinished(runId, result)),
    applyFinished: (runId, result) =>
      ending(runId, 'apply', () => port.applyFinished(runId, result)),
    phaseErrored: (runId, phase, failure) =>
      ending(runId, phase, () => port.phaseErrored(runId, phase, failure)),
    phaseCanceled: (runId, phase, outcome) =>
      ending(runId, phase, () => port.phaseCanceled(runId, phase, outcome)),
  };
}
