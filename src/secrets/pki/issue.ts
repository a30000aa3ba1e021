import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { buildLeaf } from './issuance.js';
import { resolveNames, type NameRequest, type ResolvedNames } from './names.js';
import { encodeIssued, issuedIdentity, formatOf, privateKeyFormatOf } from './present.js';
import { deepFreeze } from '../../core/read-memo.js';
import { defaultRole, type Role } from './role.js';
import { resolveNotAfter } from './ttl.js';
import { pem, randomSerial, serialText } from '../../x509/certificate.js';
import { generateEncodedKey, type EncodedKey } from '../../x509/encoded-key.js';
import { normaliseKeySpec, type KeySpec } from '../../x509/keys.js';
import { parseCertificate, parseCsr, type ParsedCsr } from '../../x509/parse.js';
import type { FieldData } from '../fields.js';
import type { LEAF_REQUEST, PRIVATE_KEY_FORMAT } from './paths-fields.js';
import type { IssueFields, SignFields } from './paths.js';

type LeafFields = typeof LEAF_REQUEST & typeof PRIVATE_KEY_FORMAT;

/** The result of an issuing endpoint: response data and warnings. */
export interface Issued {
  data: Record<string, unknown>;
  warnings: string[];
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
}

/**
 * Signs a leaf for a prepared request, records it, and encodes the response. The signature is
 * made here, on the event loop: a P-256 signature is ~30 µs, less than a round trip through the
 * libuv pool costs in CPU.
 */
function signLeaf(authority: Authority, job: LeafJob, privateKey: EncodedKey | undefined): Issued {
  const { mount, role, body } = job;
  // Read before anything is recorded: a bad value must leave no certificate behind.
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
  const now = authority.core.clock.now();
  const requestNotAfter = (body.get('not_after') ?? '') || undefined;
  const requestTtl = body.get('ttl');
  const { notAfter, warnings } = resolveNotAfter({
    now,
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
  const serial = randomSerial();
  const der = buildLeaf({
    role,
    names: job.names,
    spki: job.spki,
    signer,
    urls: authority.urls(mount),
    serial,
    notBefore: new Date(now.getTime() - role.not_before_duration * 1000),
    notAfter,
  });
  const serialHex = serialText(serial);
  const certificatePem = pem('CERTIFICATE', der);
  authority.recordIssued(mount, job.meta, {
    serial: serialHex,
    issuerId: issuer.issuer_id,
    certificate: certificatePem,
    notAfter,
    commonName: job.names.commonName,
    isCa: false,
    stored: !role.no_store,
  });
  const data = encodeIssued(
    {
      certificate: der,
      certificatePem,
      chain: authority.chain(mount, issuer),
      ...(privateKey ? { privateKey } : {}),
      bundleChain: true,
      removeRoots: body.get('remove_roots_from_chain') ?? false,
      isRoot: isSelfSigned,
    },
    format,
    keyFormat,
  );
  if (role.generate_lease)
    warnings.push(
      'generate_lease is not supported by Keel; no lease was created for this certificate',
    );
  return {
    data: {
      ...data,
      ...issuedIdentity(serialHex, notAfter),
    },
    warnings: [...job.names.warnings, ...warnings],
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
): Promise<Issued> {
  const role = loadRole(authority, mount, roleName);
  checkMetadata(body, role);
  formatOf(body.get('format'));
  privateKeyFormatOf(body.get('private_key_format'));
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
  const names = resolveNames(role, nameRequest(body));
  // Resolve the issuer before the expensive key generation, so a bad reference fails fast.
  authority.signer(
    mount,
    authority.resolveIssuer(mount, issuerRef ?? role.issuer_ref),
    'issuing-certificates',
  );
  const key = await generateEncodedKey(spec);
  // The key is made before the command; the decision (issuer, serial, validity) and the record
  // are one command, answered once durable.
  const out = await authority.run(() =>
    signLeaf(
      authority,
      {
        mount,
        meta,
        role,
        issuerRef: issuerRef ?? role.issuer_ref,
        body,
        names,
        spki: key.spki,
      },
      key,
    ),
  );
  return { data: out.data, warnings: [...warnings, ...out.warnings] };
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
): Promise<Issued> {
  const csr = verifiedCsr(body.get('csr') ?? '');
  return authority.run(() => signInCommand(authority, mount, meta, roleName, issuerRef, body, csr));
}

/**
 * Signs a CSR under the role's policy (a stored role by name, or one built for the request, as
 * ACME's sign-verbatim directories do), inside the command running now (`Authority.run`).
 */
export function signInCommand(
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
): Issued {
  const adjust = acme?.adjust ?? ((role: Role) => role);
  const role = adjust(
    typeof roleOrName === 'string' ? loadRole(authority, mount, roleOrName) : roleOrName,
  );
  checkMetadata(body, role);
  const csr = verified ?? verifiedCsr(body.get('csr') ?? '');
  checkCsrKey(role, csr.key);
  const names = resolveNames(role, nameRequest(body), csr);
  return signLeaf(
    authority,
    {
      mount,
      meta,
      role,
      issuerRef: issuerRef ?? role.issuer_ref,
      body,
      names,
      spki: csr.spki,
      errTruncates: acme !== undefined,
    },
    undefined,
  );
}

/** True for a self-signed certificate PEM. */
export function isSelfSigned(pemText: string): boolean {
  const c = parseCertificate(Buffer.from(pemText.replace(/-----[A-Z ]+-----|\s/g, ''), 'base64'));
  return c.issuer.equals(c.subject);
}
