import { isIP } from 'node:net';
import { pooledRandomBytes } from '../../../core/random.js';
import type { AcmeAuthorizationCreatedData } from '../../../../machines/acme-authorization.machine.js';
import type { AcmeChallengeType } from '../../../../machines/acme-challenge.machine.js';
import { isKeelError } from '../../../core/errors.js';
import { loadRole, nameRequest, signThrough, type Issued, type SignThrough } from '../issue.js';
import { resolveNames } from '../names.js';
import { isDnsName } from '../policy.js';
import type { Role } from '../role.js';
import { VERBATIM_ROLE, VERBATIM_ROLE_NAME } from '../sign-verbatim.js';
import { pem } from '../../../x509/certificate.js';
import { OID, readBasicConstraints } from '../../../x509/extension-values.js';
import { parseCsr, type ParsedCsr } from '../../../x509/parse.js';
import { StaleDecision } from '../authority.js';
import { directoryName } from './directory.js';
import { base64urlBytes } from './jws.js';
import type { AcmeIdentifier } from './events.js';
import { AcmeProblem, malformed, otherDirectory, unauthorized } from './problem.js';
import { accountOf, acmeCommand, asGet, type AcmeReply, type AcmeRequest } from './protocol.js';
import { orderUrl, orderView } from './present.js';
import type { AcmeOrderRow } from './projection.js';
import type { AcmeService } from './service.js';
import { retryAfter } from './retry.js';
import { parseFields } from '../../fields.js';
import { SIGN } from '../paths.js';

/** How long a new order and its authorizations stay pending. */
const ORDER_LIFETIME_MS = 24 * 3600_000;

function identifiersOf(payload: Record<string, unknown> | undefined): AcmeIdentifier[] {
  const list = payload?.identifiers;
  if (!Array.isArray(list) || list.length === 0) throw malformed('an order needs identifiers');
  const out: AcmeIdentifier[] = [];
  for (const item of list as unknown[]) {
    const { type, value } = (item ?? {}) as { type?: unknown; value?: unknown };
    if (typeof value !== 'string' || value === '') throw malformed('an identifier needs a value');
    if (type === 'ip') {
      if (!isIP(value))
        throw new AcmeProblem('rejectedIdentifier', `${value} is not an IP address`);
      out.push({ type, value });
    } else if (type === 'dns') {
      const name = value.toLowerCase();
      const bare = name.startsWith('*.') ? name.slice(2) : name;
      if (!isDnsName(bare) || bare.includes('*'))
        throw new AcmeProblem('rejectedIdentifier', `${value} is not a DNS name`);
      out.push({ type, value: name });
    } else {
      throw new AcmeProblem(
        'unsupportedIdentifier',
        `identifier type ${String(type)} is not supported`,
      );
    }
  }
  const seen = new Set(out.map((i) => `${i.type}:${i.value}`));
  if (seen.size !== out.length) throw malformed('an identifier is repeated');
  return out;
}

/** The challenges offered for an identifier (RFC 8555 §8, RFC 8737, RFC 8738). */
const challengesFor = (id: AcmeIdentifier): AcmeChallengeType[] =>
  id.type === 'ip'
    ? ['http-01', 'tls-alpn-01']
    : id.value.startsWith('*.')
      ? ['dns-01']
      : ['http-01', 'dns-01', 'tls-alpn-01'];

/**
 * The role as ACME signs under it: the common name is the first DNS identifier (none for an
 * IP-only order), never the CSR's; and unless `allow_role_ext_key_usage`, the certificate is for
 * server authentication only.
 */
const acmeRole =
  (roleExtKeyUsage: boolean) =>
  (r: Role): Role => ({
    ...r,
    require_cn: false,
    use_csr_common_name: false,
    use_csr_sans: false,
    ...(roleExtKeyUsage
      ? {}
      : {
          server_flag: true,
          client_flag: false,
          code_signing_flag: false,
          email_protection_flag: false,
          ext_key_usage: [],
          ext_key_usage_oids: [],
        }),
  });

/** Checks the identifiers against the role the order will be signed under (`rejectedIdentifier`). */
function checkPolicy(service: AcmeService, req: AcmeRequest, ids: AcmeIdentifier[]): void {
  if (!req.issuance.role) return;
  const dns = ids.filter((i) => i.type === 'dns').map((i) => i.value);
  const ips = ids.filter((i) => i.type === 'ip').map((i) => i.value);
  try {
    const role = acmeRole(req.issuance.roleExtKeyUsage)(
      loadRole(service.authority, req.mount, req.issuance.role),
    );
    resolveNames(role, {
      ...nameRequest(parseFields(SIGN, {}, { role: req.issuance.role })),
      commonName: dns[0] ?? '',
      altNames: dns,
      ipSans: ips,
    });
  } catch (err) {
    if (isKeelError(err)) throw new AcmeProblem('rejectedIdentifier', err.message);
    throw err;
  }
}

/** `new-order` (RFC 8555 §7.4): an order, one authorization per identifier, their challenges. */
export function newOrder(service: AcmeService, req: AcmeRequest): AcmeReply {
  const account = accountOf(req);
  const payload = req.payload ?? {};
  const ids = identifiersOf(payload);
  if (payload.notBefore !== undefined) throw malformed('notBefore is not supported');
  const notAfter = typeof payload.notAfter === 'string' ? payload.notAfter : '';
  if (notAfter && Number.isNaN(Date.parse(notAfter))) throw malformed('notAfter is not a time');
  checkPolicy(service, req, ids);
  const gen = service.authority.core.ids;
  const { record } = service;
  const mount = req.mount;
  const orderId = gen.uuid();
  const expires = new Date(service.now().getTime() + ORDER_LIFETIME_MS).toISOString();
  const authzs: AcmeAuthorizationCreatedData[] = ids.map((identifier) => ({
    mount,
    authorizationId: gen.uuid(),
    orderId,
    accountId: account.account_id,
    identifier,
    wildcard: identifier.value.startsWith('*.'),
    challenges: challengesFor(identifier),
    token: pooledRandomBytes(32).toString('base64url'),
    expires,
  }));
  service.authority.atomically(() => {
    const opened = { newStream: true };
    record.order(
      mount,
      orderId,
      {
        type: 'AcmeOrderCreated',
        data: {
          mount,
          orderId,
          accountId: account.account_id,
          directory: directoryName(req.dir),
          identifiers: ids,
          authorizationIds: authzs.map((a) => a.authorizationId),
          notBefore: '',
          notAfter,
          expires,
        },
      },
      req.meta,
      opened,
    );
    for (const a of authzs) {
      const authzId = a.authorizationId;
      record.authorization(
        mount,
        authzId,
        { type: 'AcmeAuthorizationCreated', data: a },
        req.meta,
        opened,
      );
      for (const challengeType of a.challenges) {
        record.challenge(
          mount,
          authzId,
          challengeType,
          {
            type: 'AcmeChallengeOffered',
            data: { mount, authorizationId: authzId, challengeType },
          },
          req.meta,
          opened,
        );
      }
    }
  });
  return {
    status: 201,
    body: orderView(req.base, service.q.order(mount, orderId)!),
    location: orderUrl(req.base, orderId),
  };
}

/**
 * An order of the signing account placed through this directory, or `malformed`/`unauthorized`.
 * (An order recorded through another directory than its account's, as an older Keel allowed, is
 * refused through both.)
 */
export function ownOrder(service: AcmeService, req: AcmeRequest, id: string): AcmeOrderRow {
  const order = service.q.order(req.mount, id);
  if (!order) throw new AcmeProblem('malformed', 'no such order', 404);
  if (order.account_id !== accountOf(req).account_id)
    throw unauthorized('the order belongs to another account');
  if (order.directory !== directoryName(req.dir)) throw otherDirectory('order');
  return order;
}

export function getOrder(service: AcmeService, req: AcmeRequest, id: string): AcmeReply {
  asGet(req);
  const order = ownOrder(service, req, id);
  return {
    body: orderView(req.base, order),
    location: orderUrl(req.base, id),
    retryAfter:
      order.status === 'pending'
        ? retryAfter(service, req.mount, JSON.parse(order.authorizations) as string[])
        : undefined,
  };
}

/** The CSR's names must be exactly the order's identifiers (RFC 8555 §7.4). */
function checkCsrNames(csrPem: string, order: AcmeOrderRow) {
  let csr;
  try {
    csr = parseCsr(csrPem);
  } catch (err) {
    throw new AcmeProblem('badCSR', err instanceof Error ? err.message : String(err));
  }
  if (!csr.signatureValid) throw new AcmeProblem('badCSR', 'the CSR signature is invalid');
  checkCsrAsks(csr);
  const want = (JSON.parse(order.identifiers) as AcmeIdentifier[]).map(
    (i) => `${i.type}:${i.value}`,
  );
  const dns = csr.altNames.filter((n) => n.type === 'dns').map((n) => n.value.toLowerCase());
  const ips = csr.altNames.filter((n) => n.type === 'ip').map((n) => n.value);
  const cn = csr.commonName.toLowerCase();
  const have = new Set([...dns.map((d) => `dns:${d}`), ...ips.map((i) => `ip:${i}`)]);
  if (cn) have.add(isIP(cn) ? `ip:${cn}` : `dns:${cn}`);
  if (have.size !== want.length || want.some((w) => !have.has(w)))
    throw new AcmeProblem(
      'badCSR',
      `the CSR names ${[...have].join(', ')} differ from the order's identifiers ${want.join(', ')}`,
    );
  return { commonName: cn && !isIP(cn) ? cn : (dns[0] ?? ''), dns, ips };
}

/**
 * A certificate from ACME carries only the order's identifiers: a CSR that asks for a CA, or for
 * names of another kind (email, URI, otherName, directoryName…), is refused rather than narrowed.
 */
function checkCsrAsks(csr: ParsedCsr): void {
  const bc = csr.extensions.find((e) => e.id === OID.basicConstraints);
  if (bc && readBasicConstraints(bc.value).ca)
    throw new AcmeProblem('badCSR', 'the CSR asks for a CA certificate; ACME issues leaves only');
  const other = [
    ...csr.altNames.filter((n) => n.type !== 'dns' && n.type !== 'ip').map((n) => n.type),
    ...csr.unsupportedNames,
  ];
  if (other.length)
    throw new AcmeProblem(
      'badCSR',
      `the CSR asks for names an ACME order cannot validate: ${[...new Set(other)].join(', ')}`,
    );
}

/**
 * Signs the CSR through the engine's issuing code, under the directory's role or, on a
 * sign-verbatim directory, the reference's verbatim role: either way the certificate is built
 * from the validated identifiers, never from the CSR's extensions, through the finalize request's
 * commands.
 */
function issue(
  service: AcmeService,
  req: AcmeRequest,
  order: AcmeOrderRow,
  csrPem: string,
  through: SignThrough,
): Promise<Issued> {
  const names = checkCsrNames(csrPem, order);
  const { role, issuerRef, roleExtKeyUsage } = req.issuance;
  const body: Record<string, unknown> = {
    csr: csrPem,
    common_name: names.commonName,
    alt_names: names.dns.join(','),
    ip_sans: names.ips.join(','),
    format: 'pem',
    ...(order.not_after ? { not_after: order.not_after } : {}),
  };
  return signThrough(
    through,
    service.authority,
    req.mount,
    req.meta,
    role ?? VERBATIM_ROLE,
    issuerRef,
    parseFields(SIGN, body, { role: role ?? VERBATIM_ROLE_NAME }),
    undefined,
    { adjust: acmeRole(roleExtKeyUsage) },
  );
}

/** The order, which must be the account's and ready. */
function readyOrder(service: AcmeService, req: AcmeRequest, id: string): AcmeOrderRow {
  const order = ownOrder(service, req, id);
  if (order.status !== 'ready')
    throw new AcmeProblem('orderNotReady', `the order is ${order.status}, not ready`);
  return order;
}

/**
 * `order/:id/finalize` (RFC 8555 §7.4): issue, and the order becomes valid, in one command that
 * also checks the account and the order (for an RSA issuer, the certificate is decided in a first
 * such command and signed on the libuv pool before it).
 */
export async function finalize(
  service: AcmeService,
  req: AcmeRequest,
  id: string,
): Promise<AcmeReply> {
  const order = readyOrder(service, req, id);
  const csrDer = base64urlBytes(req.payload?.csr);
  if (csrDer === undefined || csrDer.length === 0)
    throw new AcmeProblem('badCSR', 'csr must be base64url DER');
  const csrPem = pem('CERTIFICATE REQUEST', csrDer);
  const mount = req.mount;
  try {
    await issue(service, req, order, csrPem, {
      command: (fn) =>
        acmeCommand(service, req, (current) => {
          readyOrder(service, current, id);
          // AcmeReply is what acmeCommand's handler answers; the leaf's step answers its own.
          return service.authority.atomically(fn) as AcmeReply;
        }) as Promise<never>,
      recorded: (issued) => recordIssuedOrder(service, req, id, issued),
    });
  } catch (err) {
    if (err instanceof StaleDecision) throw new AcmeProblem('serverInternal', err.message);
    if (isKeelError(err) && err.code === 'validation') throw new AcmeProblem('badCSR', err.message);
    throw err;
  }
  return {
    body: orderView(req.base, service.q.order(mount, id)!),
    location: orderUrl(req.base, id),
  };
}

/** The order is valid: its certificate's chain, serial and expiry recorded with the certificate. */
function recordIssuedOrder(service: AcmeService, req: AcmeRequest, id: string, issued: Issued) {
  const d = issued.data as {
    certificate: string;
    ca_chain?: string[];
    serial_number: string;
    expiration: number;
  };
  const chain = [d.certificate, ...(d.ca_chain ?? []).filter((c) => c !== d.certificate)];
  service.record.order(
    req.mount,
    id,
    {
      type: 'AcmeOrderIssued',
      data: {
        mount: req.mount,
        orderId: id,
        serial: d.serial_number,
        certificate: chain.map((c) => `${c.trim()}\n`).join(''),
        notAfter: new Date(d.expiration * 1000).toISOString(),
      },
    },
    req.meta,
  );
}

/** `order/:id/cert` (RFC 8555 §7.4.2): the PEM chain. */
export function certificate(service: AcmeService, req: AcmeRequest, id: string): AcmeReply {
  asGet(req);
  const order = ownOrder(service, req, id);
  if (order.status !== 'valid')
    throw new AcmeProblem('orderNotReady', 'the order has no certificate yet');
  return { pem: order.certificate };
}
