import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority, SigningInstant } from './authority.js';
import { unsignedLeaf } from './issuance.js';
import { resolveNames, type NameRequest, type ResolvedNames } from './names.js';
import {
  encodeIssued,
  issuedIdentity,
  formatOf,
  privateKeyFormatOf,
  type Format,
} from './present.js';
import type { IssuerRow } from './projection.js';
import { deepFreeze } from '../../core/read-memo.js';
import { defaultRole, type Role } from './role.js';
import { resolveNotAfter } from './ttl.js';
import { pem, serialText, type UnsignedCertificate } from '../../x509/certificate.js';
import { generateEncodedKey, type EncodedKey } from '../../x509/encoded-key.js';
import { normaliseKeySpec, type KeySpec } from '../../x509/keys.js';
import { parseCertificate, parseCsr, type ParsedCsr } from '../../x509/parse.js';
import { leaseAnswer, leaseFor, leasesOf } from './leases.js';
import type { FieldData } from '../fields.js';
import type { LEAF_REQUEST, PRIVATE_KEY_FORMAT } from './paths-fields.js';
import type { IssueFields, SignFields } from './paths.js';

type LeafFields = typeof LEAF_REQUEST & typeof PRIVATE_KEY_FORMAT;

/** The result of an issuing endpoint: response data and warnings. */
export interface Issued {
  data: Record<string, unknown>;
  warnings: string[];
  /** the certificate's lease (`generate_lease`), for the answer's envelope */
  lease?: { id: string; duration: number };
}

/** Roles with their defaults filled in, by the stored (remembered, frozen) row they came from. */
const withDefaults = new WeakMap<object, Role>();

/**
 * Loads a role or answers the reference's `unknown role: X`. Stored roles were validated when
 * written; defaults fill fields added since. The result is frozen: while the stored row is
 * unchanged, every request shares it (and what is encoded from it).
 */
export function loadRole(authority: Authority, mount: string, name: string): Role {
  const stored = authority.role(mount, name);
  if (!stored || typeof stored !== 'object') throw new ValidationError(`unknown role: ${name}`);
  let role = withDefaults.get(stored);
  if (!role) {
    role = deepFreeze({ ...defaultRole(), ...(stored as Partial<Role>) });
    if (Object.isFrozen(stored)) withDefaults.set(stored, role);
  }
  return role;
}

/** The naming fields of issue and sign bodies. */
export function nameRequest(b: FieldData<typeof LEAF_REQUEST>): NameRequest {
  return {
    commonName: (b.get('common_name') ?? '').trim(),
    altNames: [...new Set(b.get('alt_names') ?? [])],
    ipSans: b.get('ip_sans') ?? [],
    uriSans: b.get('uri_sans') ?? [],
    otherSans: b.get('other_sans') ?? [],
    userIds: b.get('user_ids') ?? [],
    serialNumber: b.get('serial_number') ?? '',
    excludeCnFromSans: b.get('exclude_cn_from_sans') ?? false,
  };
}

/** Minimum key checks of a CSR against a role (research §3.5); the RSA floor is `verifiedCsr`'s. */
export function checkCsrKey(role: Pick<Role, 'key_type' | 'key_bits'>, key: KeySpec): void {
  if (role.key_type === 'any') return;
  if (key.type !== role.key_type)
    throw new ValidationError(`role requires keys of type ${role.key_type}`);
  if (key.type !== 'ed25519' && key.bits < role.key_bits) {
    throw new ValidationError(
      `role requires a minimum of a ${role.key_bits}-bit key, but CSR's key is ${key.bits} bits`,
    );
  }
}

/** Parses a CSR and refuses one whose self-signature does not verify. */
export function verifiedCsr(text: string): ParsedCsr {
  const csr = parseCsr(text);
  if (!csr.signatureValid) throw new ValidationError('certificate request signature is invalid');
  // The reference's floor for every CSR, whatever the path or the role's key_type.
  if (csr.key.type === 'rsa' && csr.key.bits < 2048) {
    throw new ValidationError(
      `RSA keys < 2048 bits are unsafe and not supported: the CSR's key is ${csr.key.bits} bits`,
    );
  }
  return csr;
}

/** `cert_metadata` cannot be stored by Keel: refused with the reason. */
export function checkMetadata(
  b: FieldData<Pick<typeof LEAF_REQUEST, 'cert_metadata'>>,
  role: Role | undefined,
): void {
  if (!b.get('cert_metadata')) return;
  if (!role || role.no_store_metadata) {
    throw new ValidationError(
      'cert_metadata cannot be stored: the role has no_store_metadata set or no role was given',
    );
  }
  throw new ValidationError(
    'cert_metadata is an edition-restricted feature and is not available in Keel',
  );
}

interface LeafJob {
  mount: string;
  meta: AuditMetadata;
  role: Role;
  issuerRef: string;
  body: FieldData<LeafFields>;
  names: ResolvedNames;
  spki: Buffer;
  /** ACME's rule: where the issuer would refuse a leaf that outlives it, truncate instead */
  errTruncates?: boolean;
  /** what the role's reading of the request warned of (issue's ignored key parameters) */
  planWarnings?: string[];
  /** the request's path under `/v1/`, where a role's `generate_lease` makes a lease (`leaseFor`) */
  leasePath?: string;
}

/** A leaf decided (issuer, validity, serial) and not yet signed. */
interface LeafDecision {
  job: LeafJob;
  unsigned: UnsignedCertificate;
  issuer: IssuerRow;
  serialHex: string;
  notAfter: Date;
  warnings: string[];
  format: ReturnType<typeof formatOf>;
  keyFormat: ReturnType<typeof privateKeyFormatOf>;
}

/** A leaf signed and recorded: what its answer is encoded from, after the command. */
interface SignedLeaf {
  job: LeafJob;
  der: Buffer;
  certificatePem: string;
  chain: string[];
  serialHex: string;
  notAfter: Date;
  warnings: string[];
  format: ReturnType<typeof formatOf>;
  keyFormat: ReturnType<typeof privateKeyFormatOf>;
  lease: Issued['lease'];
}

/**
 * Decides a leaf for a prepared request at the given instant and serial: the issuer, the validity
 * and the TBSCertificate. A function of the state, the request and `at` alone, so that the
 * recording command can decide it again and compare (`Authority.issueSigned`).
 */
function decideLeaf(authority: Authority, job: LeafJob, at: SigningInstant): LeafDecision {
  const { mount, role, body } = job;
  // Read before anything is signed: a bad value must leave no certificate behind.
  const format = formatOf(body.get('format'));
  const keyFormat = privateKeyFormatOf(body.get('private_key_format'));
  const issuer = authority.resolveIssuer(mount, job.issuerRef);
  const signer = authority.signer(
    mount,
    issuer,
    'issuing-certificates',
    role.signature_bits,
    role.use_pss,
  );
  const requestNotAfter = (body.get('not_after') ?? '') || undefined;
  const requestTtl = body.get('ttl');
  const { notAfter, warnings } = resolveNotAfter({
    now: at.now,
    mountTtls: authority.mountTtls(mount),
    requestTtl,
    notAfter:
      requestNotAfter ?? (requestTtl === undefined && role.not_after ? role.not_after : undefined),
    roleTtl: role.ttl,
    roleMaxTtl: role.max_ttl,
    issuerNotAfter: signer.cert.notAfter,
    behavior:
      job.errTruncates && issuer.settings.leafNotAfterBehavior === 'err'
        ? 'truncate'
        : issuer.settings.leafNotAfterBehavior,
  });
  const unsigned = unsignedLeaf({
    role,
    names: job.names,
    spki: job.spki,
    signer,
    urls: authority.urls(mount),
    serial: at.serial,
    notBefore: new Date(at.now.getTime() - role.not_before_duration * 1000),
    notAfter,
  });
  return {
    job,
    unsigned,
    issuer,
    serialHex: serialText(at.serial),
    notAfter,
    warnings,
    format,
    keyFormat,
  };
}

/**
 * Decides, signs and records the leaf of `job()` (`Authority.issueSigned`): in one command, or,
 * for an RSA issuer, decided, signed on the libuv pool and recorded by the next command. `job`
 * reads the role; it runs again, with the decision, whenever the leaf is decided again.
 */
function issueLeaf(authority: Authority, mount: string, job: () => LeafJob): Promise<SignedLeaf> {
  return authority.issueSigned(
    mount,
    (at) => decideLeaf(authority, job(), at),
    (decision, der) => recordLeaf(authority, decision, der),
  );
}

/**
 * Records a decided and signed leaf inside the command running now: the certificate is appended on
 * its serial's stream. Only a recorded leaf is ever answered.
 */
function recordLeaf(authority: Authority, decision: LeafDecision, der: Buffer): SignedLeaf {
  const { job } = decision;
  const certificatePem = pem('CERTIFICATE', der);
  const leaseId = leaseFor(authority, leasesOf(job.role), job.leasePath);
  authority.recordIssued(job.mount, job.meta, {
    serial: decision.serialHex,
    issuerId: decision.issuer.issuer_id,
    certificate: certificatePem,
    notAfter: decision.notAfter,
    commonName: job.names.commonName,
    isCa: false,
    stored: !job.role.no_store,
    ...(leaseId === undefined ? {} : { leaseId }),
  });
  return {
    job,
    der,
    certificatePem,
    chain: authority.chain(job.mount, decision.issuer),
    serialHex: decision.serialHex,
    notAfter: decision.notAfter,
    warnings: decision.warnings,
    format: decision.format,
    keyFormat: decision.keyFormat,
    lease: leaseAnswer(authority, leaseId, decision.notAfter),
  };
}

/** The answer for a recorded leaf (encoded once the command is done: it reads no state). */
function leafAnswer(leaf: SignedLeaf, privateKey: EncodedKey | undefined): Issued {
  const { job } = leaf;
  const data = encodeIssued(
    {
      certificate: leaf.der,
      certificatePem: leaf.certificatePem,
      chain: leaf.chain,
      ...(privateKey ? { privateKey } : {}),
      bundleChain: true,
      removeRoots: job.body.get('remove_roots_from_chain') ?? false,
      isRoot: isSelfSigned,
    },
    leaf.format,
    leaf.keyFormat,
  );
  const warnings = [...(job.planWarnings ?? []), ...job.names.warnings, ...leaf.warnings];
  return {
    data: { ...data, ...issuedIdentity(leaf.serialHex, leaf.notAfter) },
    warnings,
    ...(leaf.lease === undefined ? {} : { lease: leaf.lease }),
  };
}

/**
 * `issue/:role` and `issuer/:ref/issue/:role`: generate a key (RSA and the larger curves off the
 * event loop), then sign.
 */
export async function issue(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  roleName: string,
  issuerRef: string | undefined,
  body: FieldData<IssueFields>,
  /** the request's path under `/v1/`: a role's `generate_lease` makes a lease there */
  leasePath?: string,
): Promise<Issued> {
  const planned = issuePlan(authority, mount, roleName, body);
  formatOf(body.get('format'));
  privateKeyFormatOf(body.get('private_key_format'));
  // Resolve the issuer before the expensive key generation, so a bad reference fails fast.
  authority.signer(
    mount,
    authority.resolveIssuer(mount, issuerRef ?? planned.role.issuer_ref),
    'issuing-certificates',
  );
  const key = await generateEncodedKey(planned.spec);
  // The key is made before the command; the role's policy, the decision (issuer, serial,
  // validity), the signature and the record follow on the state as it is then (for an RSA issuer,
  // the signature is made on the libuv pool between two commands), answered once durable.
  const leaf = await issueLeaf(authority, mount, () => {
    const plan = issuePlan(authority, mount, roleName, body);
    if (plan.spec.type !== planned.spec.type || plan.spec.bits !== planned.spec.bits)
      throw new ValidationError(
        `role ${roleName} changed while its key was generated: it now asks for ${plan.spec.type} keys of ${plan.spec.bits} bits; nothing was issued`,
      );
    return {
      mount,
      meta,
      role: plan.role,
      issuerRef: issuerRef ?? plan.role.issuer_ref,
      body,
      names: plan.names,
      spki: key.spki,
      planWarnings: plan.warnings,
      ...(leasePath === undefined ? {} : { leasePath }),
    };
  });
  return leafAnswer(leaf, key);
}

/** What the role asks of an `issue` request: the key to generate and the names. */
function issuePlan(
  authority: Authority,
  mount: string,
  roleName: string,
  body: FieldData<IssueFields>,
): { role: Role; spec: KeySpec; names: ResolvedNames; warnings: string[] } {
  const role = loadRole(authority, mount, roleName);
  checkMetadata(body, role);
  const warnings: string[] = [];
  let spec: KeySpec;
  if (role.key_type === 'any') {
    const type = body.get('key_type') ?? '';
    if (!type || type === 'any') {
      throw new ValidationError(
        'role key type "any" not allowed for issuing certificates without providing key_type and/or key_bits request parameters',
      );
    }
    spec = normaliseKeySpec(type, body.get('key_bits'));
  } else {
    spec = { type: role.key_type, bits: role.key_bits };
    if (body.sent('key_type') || body.sent('key_bits'))
      warnings.push('parameters key_type and key_bits ignored as role had specific values');
  }
  return { role, spec, names: resolveNames(role, nameRequest(body)), warnings };
}

/**
 * `sign/:role` and `issuer/:ref/sign/:role`: the CSR and its signature are checked first, then
 * the role's policy, the decision and the record are one command.
 */
export async function sign(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  roleName: string,
  issuerRef: string | undefined,
  body: FieldData<SignFields>,
  /** the request's path under `/v1/`: a role's `generate_lease` makes a lease there */
  leasePath?: string,
): Promise<Issued> {
  const csr = verifiedCsr(body.get('csr') ?? '');
  const leaf = await issueLeaf(authority, mount, () => ({
    ...signJob(authority, mount, meta, roleName, issuerRef, body, csr),
    ...(leasePath === undefined ? {} : { leasePath }),
  }));
  return leafAnswer(leaf, undefined);
}

/** How a caller runs the leaf's commands and what it records with the leaf (ACME's finalize). */
export interface SignThrough {
  /** runs its function as a command of the caller's, with the caller's own checks around it */
  command: <R>(fn: () => R) => Promise<R>;
  /** what the caller records with the leaf, in the command that records it */
  recorded: (issued: Issued) => void;
}

/**
 * Decides, signs and records a CSR under the role's policy (a stored role by name, or one built for
 * the request, as ACME's sign-verbatim directories do), through the caller's commands.
 */
export function signThrough(
  through: SignThrough,
  ...request: Parameters<typeof signJob>
): Promise<Issued> {
  const [authority, mount] = request;
  return authority.issueSigned(
    mount,
    (at) => decideLeaf(authority, signJob(...request), at),
    (decision, der) => {
      const issued = leafAnswer(recordLeaf(authority, decision, der), undefined);
      through.recorded(issued);
      return issued;
    },
    through.command,
  );
}

/** The role's policy applied to a CSR: what `decideLeaf` decides. */
function signJob(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  roleOrName: string | Role,
  issuerRef: string | undefined,
  body: FieldData<SignFields>,
  /** the request's CSR, when already parsed and verified */
  verified?: ParsedCsr,
  /** ACME's changes: the role narrowed for the request; a leaf outliving its issuer truncated */
  acme?: { adjust: (role: Role) => Role },
): LeafJob {
  const adjust = acme?.adjust ?? ((role: Role) => role);
  const role = adjust(
    typeof roleOrName === 'string' ? loadRole(authority, mount, roleOrName) : roleOrName,
  );
  checkMetadata(body, role);
  const csr = verified ?? verifiedCsr(body.get('csr') ?? '');
  checkCsrKey(role, csr.key);
  const names = resolveNames(role, nameRequest(body), csr);
  return {
    mount,
    meta,
    role,
    issuerRef: issuerRef ?? role.issuer_ref,
    body,
    names,
    spki: csr.spki,
    errTruncates: acme !== undefined,
  };
}

/**
 * The answer's data for a certificate `issuer` signed, without a private key: encoded as the
 * reference answers a signed certificate, with the issuer's chain (its roots left out when
 * `removeRoots`), the serial and the expiry.
 */
export function signedData(
  authority: Authority,
  mount: string,
  issuer: IssuerRow,
  signed: { der: Buffer; serial: string; notAfter: Date },
  format: Format,
  removeRoots: boolean,
): Record<string, unknown> {
  const data = encodeIssued(
    {
      certificate: signed.der,
      chain: authority.chain(mount, issuer),
      bundleChain: true,
      removeRoots,
      isRoot: isSelfSigned,
    },
    format,
    'der',
  );
  return { ...data, ...issuedIdentity(signed.serial, signed.notAfter) };
}

/** True for a self-signed certificate PEM. */
export function isSelfSigned(pemText: string): boolean {
  const c = parseCertificate(Buffer.from(pemText.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64'));
  return c.issuer.equals(c.subject);
}
