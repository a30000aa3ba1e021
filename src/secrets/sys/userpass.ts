import type { RouterContext } from '@koa/router';
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { KeelError, NotFoundError, ValidationError } from '../../core/errors.js';
import { multierror } from '../../http/errors.js';
import { requestData, sendVault } from '../../http/vault.js';
import { parseFields, segmentsOnly } from '../fields.js';
import { checkPolicyName } from '../names.js';
import { authMountOf, cidrList, sendLogin } from './approle.js';
import { authMountDecider } from './commands.js';
import type { UserpassSettings } from './events.js';
import { NO_TOKEN_SETTINGS, userpassUserStream } from './events.js';
import { USERPASS_LOGIN, USERPASS_PASSWORD, USERPASS_POLICIES, USERPASS_USER } from './paths.js';
import type { AuthMountRow, UserpassUserRow } from './projection.js';
import { sysRoute, type SysRoute, type SysRouteDeps, type SysScope } from './routes.js';

const NEW_USER: UserpassSettings = {
  ...NO_TOKEN_SETTINGS,
  token_num_uses: 0,
  token_bound_cidrs: [],
};

/** scrypt's cost as Keel hashes passwords (N = 2^15, r = 8, p = 1: about 32 MiB and tens of ms). */
const COST = { N: 1 << 15, r: 8, p: 1 } as const;
const KEY_LENGTH = 32;
const maxmem = (N: number, r: number) => 128 * N * r * 2;

const derive = (password: string, salt: Buffer, c: { N: number; r: number; p: number }) =>
  new Promise<Buffer>((resolve, reject) =>
    // The asynchronous form runs on libuv's pool: the event loop does not wait on the hash.
    scrypt(password, salt, KEY_LENGTH, { ...c, maxmem: maxmem(c.N, c.r) }, (err, key) =>
      err === null ? resolve(key) : reject(err),
    ),
  );

/** A password as the log keeps it: `scrypt$N$r$p$salt$hash` (base64), never in clear. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, COST);
  return ['scrypt', COST.N, COST.r, COST.p, salt.toString('base64'), key.toString('base64')].join(
    '$',
  );
}

/** Whether `password` is the one `stored` was made from (compared in constant time). */
export async function passwordMatches(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || salt === undefined || hash === undefined) return false;
  const expected = Buffer.from(hash, 'base64');
  const key = await derive(password, Buffer.from(salt, 'base64'), {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** Checked against when the user does not exist, so that answer takes as long as a wrong password. */
let dummy: Promise<string> | undefined;

/** The reference's user names: word characters, with `-`, `.` and `@` inside. */
const USERNAME = /^\w(?:[\w\-.@]*\w)?$/;

const refused = (what: string, why: string) =>
  new ValidationError(`${what} is not supported by Keel's userpass: ${why}`);

const mountOf = (ctx: RouterContext, { queries }: SysRouteDeps) =>
  authMountOf(queries, ctx, 'userpass');
const usernameOf = (ctx: RouterContext): string => {
  const name = (ctx.params.username ?? '').toLowerCase();
  if (!USERNAME.test(name)) throw new ValidationError(`invalid username ${JSON.stringify(name)}`);
  return name;
};
const captures = (ctx: RouterContext, username: string) => ({
  mount: ctx.params.mount!,
  username,
});
const write = (
  deps: SysRouteDeps,
  m: AuthMountRow,
  username: string,
  row: UserpassUserRow,
  ctx: RouterContext,
) =>
  deps.core.handler.handle(
    userpassUserStream(m.accessor, username),
    authMountDecider,
    () => [{ type: 'UserpassUserWritten' as const, data: { ...row, mount: m.accessor } }],
    deps.metadata(ctx),
  );
const existing = (deps: SysRouteDeps, m: AuthMountRow, username: string): UserpassUserRow => {
  const row = deps.queries.userpassUser(m.accessor, username);
  if (row === undefined) throw new ValidationError('username does not exist');
  return row;
};

const listUsers = (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  if (ctx.state.list !== true)
    throw new KeelError('unsupported', multierror('unsupported operation'));
  for (const page of ['after', 'limit'])
    if (ctx.query[page] !== undefined) throw refused(page, 'it lists every user at once');
  const keys = deps.queries.userpassUsernames(m.accessor);
  if (keys.length === 0) throw new NotFoundError('');
  sendVault(ctx, { keys });
};

const readUser = (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const row = deps.queries.userpassUser(m.accessor, usernameOf(ctx));
  if (row === undefined) throw new NotFoundError('');
  sendVault(ctx, { ...row.settings, token_type: 'default' });
};

const writeUser = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const username = usernameOf(ctx);
  const d = parseFields(USERPASS_USER, requestData(ctx), captures(ctx, username));
  const before = deps.queries.userpassUser(m.accessor, username);
  if (d.get('password_hash') !== undefined)
    throw refused('password_hash', 'give the password; Keel hashes it with scrypt, not bcrypt');
  const password = d.get('password') ?? '';
  if (before === undefined && password === '')
    throw new ValidationError('must provide either password or password_hash');
  const s: UserpassSettings = { ...(before?.settings ?? NEW_USER) };
  const policies = d.get('token_policies') ?? d.get('policies');
  if (policies !== undefined) {
    policies.forEach(checkPolicyName);
    s.token_policies = [...new Set(policies.map((p) => p.toLowerCase()))].sort();
  }
  s.token_ttl = d.get('token_ttl') ?? d.get('ttl') ?? s.token_ttl;
  s.token_max_ttl = d.get('token_max_ttl') ?? d.get('max_ttl') ?? s.token_max_ttl;
  s.token_explicit_max_ttl = d.get('token_explicit_max_ttl') ?? s.token_explicit_max_ttl;
  s.token_period = d.get('token_period') ?? s.token_period;
  s.token_no_default_policy = d.get('token_no_default_policy') ?? s.token_no_default_policy;
  const uses = d.get('token_num_uses');
  if (uses !== undefined && uses < 0)
    throw new ValidationError('token_num_uses cannot be negative');
  s.token_num_uses = uses ?? s.token_num_uses;
  const cidrs = d.get('token_bound_cidrs') ?? d.get('bound_cidrs');
  if (cidrs !== undefined) s.token_bound_cidrs = cidrList('token_bound_cidrs', cidrs);
  const type = d.get('token_type') ?? '';
  if (!['', 'default', 'service', 'default-service'].includes(type))
    throw refused(`token_type ${JSON.stringify(type)}`, 'it makes service tokens');
  if (s.token_max_ttl > 0 && s.token_ttl > s.token_max_ttl)
    throw new ValidationError('token_ttl should not be greater than token_max_ttl');
  const passwordHash =
    password === '' ? (before?.passwordHash ?? '') : await hashPassword(password);
  await write(deps, m, username, { mount: m.accessor, username, passwordHash, settings: s }, ctx);
  sendVault(ctx, undefined);
};

const deleteUser = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const username = usernameOf(ctx);
  await deps.core.handler.handle(
    userpassUserStream(m.accessor, username),
    authMountDecider,
    () =>
      deps.queries.userpassUser(m.accessor, username) === undefined
        ? []
        : [{ type: 'UserpassUserDeleted' as const, data: { mount: m.accessor, username } }],
    deps.metadata(ctx),
  );
  sendVault(ctx, undefined);
};

const setPassword = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const username = usernameOf(ctx);
  const d = parseFields(USERPASS_PASSWORD, requestData(ctx), captures(ctx, username));
  const row = existing(deps, m, username);
  const password = d.get('password') ?? '';
  if (password === '') throw new ValidationError('must provide either password or password_hash');
  await write(deps, m, username, { ...row, passwordHash: await hashPassword(password) }, ctx);
  sendVault(ctx, undefined);
};

const setPolicies = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const username = usernameOf(ctx);
  const d = parseFields(USERPASS_POLICIES, requestData(ctx), captures(ctx, username));
  const row = existing(deps, m, username);
  const policies = d.get('token_policies') ?? d.get('policies') ?? [];
  policies.forEach(checkPolicyName);
  const settings = {
    ...row.settings,
    token_policies: [...new Set(policies.map((p) => p.toLowerCase()))].sort(),
  };
  await write(deps, m, username, { ...row, settings }, ctx);
  sendVault(ctx, undefined);
};

// Needs no token (declared unauthenticated): the password is the credential.
const login = async (ctx: RouterContext, deps: SysScope) => {
  const m = mountOf(ctx, deps);
  const username = usernameOf(ctx);
  const d = parseFields(USERPASS_LOGIN, requestData(ctx), captures(ctx, username));
  const password = d.get('password') ?? '';
  if (password === '') throw new ValidationError('missing password');
  const user = deps.queries.userpassUser(m.accessor, username);
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  const matches = await passwordMatches(password, user?.passwordHash ?? (await dummy));
  if (user === undefined || !matches) throw new ValidationError('invalid username or password');
  const s = user.settings;
  await sendLogin(ctx, deps, m, s, {
    meta: { username },
    displayName: `${m.path.replace(/\/$/, '')}-${username}`,
    // The user may have been deleted or changed while the password was checked.
    before: () => {
      const now = deps.queries.userpassUser(m.accessor, username);
      if (now === undefined || now.passwordHash !== user.passwordHash)
        throw new ValidationError('invalid username or password');
    },
  });
};

/**
 * The userpass auth method (`auth/<mount>/…`): users with a password (kept as a salted scrypt
 * hash) and the token fields the reference gives them; `login/:username` needs no token and
 * answers an orphan service token with the user's policies, TTLs, uses and CIDR binding.
 */
export const USERPASS_ROUTES: readonly SysRoute[] = [
  sysRoute(
    segmentsOnly('auth/:mount/users', 'List userpass users', ['list']),
    { list: listUsers },
    { getAsList: true },
  ),
  sysRoute(USERPASS_USER, { read: readUser, update: writeUser, delete: deleteUser }),
  sysRoute(USERPASS_PASSWORD, { update: setPassword }),
  sysRoute(USERPASS_POLICIES, { update: setPolicies }),
  sysRoute(USERPASS_LOGIN, { update: login }, { unauthenticated: true }),
];
