import { createPrivateKey, randomUUID } from 'node:crypto';
import { search, type JSONValue } from '@jmespath-community/jmespath';
import { ValidationError } from '../../../core/errors.js';
import type { AuditMetadata } from '../../../core/events.js';
import type { SecretsToken } from '../../../http/types.js';
import type { Authority } from '../authority.js';
import { consultationDecider } from '../deciders.js';
import { streams, type ConsultationData } from '../events.js';
import { urlExtensions } from '../issuance.js';
import { isSelfSigned, verifiedCsr, type Issued } from '../issue.js';
import { buildCsr } from '../ca.js';
import { encodeIssued, formatOf, issuedIdentity, privateKeyFormatOf } from '../present.js';
import { durationText } from '../role.js';
import {
  buildCertificate,
  pem,
  pemBlocks,
  randomSerial,
  serialText,
} from '../../../x509/certificate.js';
import * as der from '../../../x509/der.js';
import { generateEncodedKey, type EncodedKey } from '../../../x509/encoded-key.js';
import * as ext from '../../../x509/extensions.js';
import { keyIdentifier, normaliseKeySpec } from '../../../x509/keys.js';
import { parseCertificate, type ParsedCertificate } from '../../../x509/parse.js';
import { rewriteExtensions } from '../rewrite-extensions.js';
import { consult, ConsultationFailure, type PolicyAnswer } from './client.js';
import { leaseAnswer, leaseFor } from '../leases.js';
import { defaultExternalPolicy, type ExternalPolicyConfig } from './config.js';

/**
 * External-policy issuance (the reference's CIEPS): Keel authenticates and authorizes the caller
 * as for issue/sign, sends the policy service the request document, and builds the certificate
 * from the template the service approves — checked against what the issuer can sign — with the
 * CSR's public key. Every consultation is recorded, whatever its outcome.
 */

export type Mode = 'issue' | 'sign' | 'ica';

export interface ExternalRequest {
  mount: string;
  /** the mount's path, e.g. `pki/` */
  mountPath: string;
  mode: Mode;
  policy: string;
  /** the issuer the path names, undefined for the default */
  issuerRef: string | undefined;
  /** the request's parameters as sent */
  raw: Record<string, unknown>;
  token: SecretsToken | undefined;
  meta: AuditMetadata;
  /** the request's path under `/v1/`: the service's `generate_lease` makes a lease there */
  leasePath?: string;
}

export const externalPolicyOf = (authority: Authority, mount: string): ExternalPolicyConfig =>
  authority.q.config<ExternalPolicyConfig>(mount, 'external-policy') ?? defaultExternalPolicy();

/** The values of the caller's identity the configuration asks for, by JMESPath. */
function identityValues(config: ExternalPolicyConfig, token: SecretsToken | undefined) {
  // Keel's identity is the token: its accessor, name and policies; it has no identity groups.
  const entity = {
    id: token?.accessor ?? '',
    name: token?.displayName ?? '',
    policies: [...(token?.policies ?? [])],
  };
  const out: Record<string, unknown> = {};
  for (const [k, expr] of Object.entries(config.entityJmespath)) out[k] = search(entity, expr);
  for (const [k, expr] of Object.entries(config.groupJmespath))
    out[k] = search([] as JSONValue, expr);
  return out;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * The extensions of the signed certificate, each read from the template and written anew: a CA
 * only on sign-intermediate, and then it must be one; a critical extension Keel does not read is
 * refused, a non-critical one is carried as the service wrote it (that is what a policy service
 * is for).
 */
const templateExtensions = (template: ParsedCertificate, mode: Mode, signer: ParsedCertificate) =>
  rewriteExtensions(template.extensions, template.subject, {
    who: 'external policy service',
    kind: mode === 'ica' ? 'ca' : 'leaf',
    signerPathLen: signer.pathLen,
    unknown: 'carry-non-critical',
    caRefused: 'external policy service returned a CA certificate template for a leaf request',
  });

/** The template of an approval, checked against the request and the issuer. */
function readTemplate(answer: PolicyAnswer, spki: Buffer, signer: ParsedCertificate) {
  const block = pemBlocks(answer.certificate).find((b) => b.label === 'CERTIFICATE');
  if (!block)
    throw new ConsultationFailure(
      'external policy service: approved without a certificate template',
    );
  const template = parseCertificate(block.der);
  if (!template.spki.equals(spki))
    throw new ValidationError(
      "external policy service returned a template for another public key than the request's",
    );
  if (template.notAfter <= template.notBefore)
    throw new ValidationError('external policy service returned a template that is never valid');
  if (template.notAfter > signer.notAfter)
    throw new ValidationError(
      `cannot satisfy request, as the external policy service's notAfter of ${template.notAfter.toISOString()} is beyond the expiration of the CA certificate at ${signer.notAfter.toISOString()}`,
    );
  return template;
}

/** A CSR with an empty subject over a key Keel generated, for the service to see the key. */
async function generatedRequest(raw: Record<string, unknown>) {
  const type = text(raw.key_type) || 'rsa';
  const bits = typeof raw.key_bits === 'number' ? raw.key_bits : Number(raw.key_bits ?? 0) || 0;
  const key = await generateEncodedKey(normaliseKeySpec(type, bits));
  const keyObject = createPrivateKey({
    key: key.privateDer('pkcs8'),
    format: 'der',
    type: 'pkcs8',
  });
  const csr = pem('CERTIFICATE REQUEST', buildCsr(keyObject, der.seq(), [], false));
  return { key, csr };
}

/** Issues, signs or signs an intermediate through the external policy service. */
export async function externalIssue(authority: Authority, r: ExternalRequest): Promise<Issued> {
  const config = externalPolicyOf(authority, r.mount);
  if (!config.enabled)
    throw new ValidationError(
      'external policy issuance is not enabled on this mount (config/external-policy)',
    );
  const format = formatOf(r.raw.format);
  const keyFormat = privateKeyFormatOf(r.raw.private_key_format);
  const requested = authority.resolveIssuer(r.mount, r.issuerRef ?? 'default');
  let key: EncodedKey | undefined;
  let csrPem: string;
  if (r.mode === 'issue') {
    ({ key, csr: csrPem } = await generatedRequest(r.raw));
  } else {
    csrPem = text(r.raw.csr);
  }
  const csr = verifiedCsr(csrPem);
  const mountTtls = authority.mountTtls(r.mount);
  const urls = authority.urls(r.mount);
  const requestUuid = randomUUID();
  const document = {
    request_version: 1,
    request_uuid: requestUuid,
    synchronous: true,
    user_request_key_values: { ...r.raw, csr: csrPem },
    identity_request_key_values: identityValues(config, r.token),
    vault_request_values: {
      ...(r.policy ? { policy_name: r.policy } : {}),
      mount: r.mountPath,
      ns: '',
      vault_is_performance_standby: false,
      vault_is_performance_secondary: false,
      issuance_mode: r.mode,
      vault_generated_private_key: r.mode === 'issue',
      requested_issuer_name: requested.name,
      requested_issuer_id: requested.issuer_id,
      requested_issuer_cert: requested.certificate,
      requested_issuance_config: {
        aia_values: urls,
        leaf_not_after_behavior: requested.settings.leafNotAfterBehavior,
        mount_default_ttl: durationText(mountTtls.defaultTtl),
        mount_max_ttl: durationText(mountTtls.maxTtl),
      },
    },
  };
  const record = (
    data: Omit<ConsultationData, 'mount' | 'requestUuid' | 'mode' | 'policy' | 'request'>,
  ) =>
    authority.append(
      streams.consultation(r.mount, requestUuid),
      consultationDecider,
      () => [
        {
          type: 'PkiExternalPolicyConsulted' as const,
          data: {
            mount: r.mount,
            requestUuid,
            mode: r.mode,
            policy: r.policy,
            request: document,
            ...data,
          },
        },
      ],
      r.meta,
    );
  /** Records the refusal (a command of its own, kept), then answers with it. */
  const refuse = async (
    outcome: 'refused' | 'failed',
    answer: string,
    err: ValidationError,
  ): Promise<never> => {
    await authority.run(() => record({ outcome, answer, detail: err.message, serial: '' }));
    throw err;
  };

  let answer: PolicyAnswer;
  try {
    const clientKey = config.clientKey ? authority.core.sealer.unseal(config.clientKey) : '';
    answer = await consult(config, document, clientKey);
  } catch (e) {
    if (e instanceof ValidationError) return refuse('failed', '', e);
    throw e;
  }
  const answerText = JSON.stringify(answer);
  if (answer.error)
    return refuse(
      'refused',
      answerText,
      new ValidationError(`external policy service refused the request: ${answer.error}`),
    );
  type Built = { der: Buffer; serial: Buffer; issuerId: string; notAfter: Date; chain: string[] };
  // The issuer, the serial and the record are decided in one command, on the state as it is then;
  // a refusal of the answer is recorded by that command and kept (it is returned, not thrown).
  const decided = await authority.run(
    ():
      | { built: Built; serialHex: string; leaseId: string | undefined }
      | { refused: ValidationError } => {
      let built: Built;
      try {
        const issuer = answer.issuer_ref
          ? authority.resolveIssuer(r.mount, answer.issuer_ref)
          : requested;
        const signer = authority.signer(r.mount, issuer, 'issuing-certificates');
        const template = readTemplate(answer, csr.spki, signer.cert);
        const extensions = [
          ...templateExtensions(template, r.mode, signer.cert),
          ext.subjectKeyId(keyIdentifier(csr.spki)),
          ...(signer.cert.subjectKeyId ? [ext.authorityKeyId(signer.cert.subjectKeyId)] : []),
          ...urlExtensions(urls),
        ];
        const serial = randomSerial();
        built = {
          der: buildCertificate({
            serial,
            issuer: signer.cert.subject,
            subject: template.subject,
            notBefore: template.notBefore,
            notAfter: template.notAfter,
            spki: csr.spki,
            extensions,
            scheme: signer.scheme,
            signingKey: signer.key,
          }),
          serial,
          issuerId: issuer.issuer_id,
          notAfter: template.notAfter,
          chain: authority.chain(r.mount, issuer),
        };
      } catch (e) {
        if (e instanceof ValidationError) {
          record({ outcome: 'refused', answer: answerText, detail: e.message, serial: '' });
          return { refused: e };
        }
        throw e;
      }
      const serialHex = serialText(built.serial);
      const issued = parseCertificate(built.der);
      record({ outcome: 'approved', answer: answerText, detail: '', serial: serialHex });
      // The service's generate_lease, as a role's: a stored certificate only.
      const leaseId = leaseFor(
        authority,
        answer.generate_lease && answer.store_certificate,
        r.leasePath,
      );
      authority.recordIssued(r.mount, r.meta, {
        serial: serialHex,
        issuerId: built.issuerId,
        certificate: pem('CERTIFICATE', built.der),
        notAfter: built.notAfter,
        commonName: issued.commonName,
        isCa: r.mode === 'ica',
        stored: answer.store_certificate,
        ...(leaseId === undefined ? {} : { leaseId }),
      });
      return { built, serialHex, leaseId };
    },
  );
  if ('refused' in decided) throw decided.refused;
  const { built, serialHex, leaseId } = decided;
  const certificatePem = pem('CERTIFICATE', built.der);
  const data = encodeIssued(
    {
      certificate: built.der,
      certificatePem,
      chain: built.chain,
      ...(key ? { privateKey: key } : {}),
      bundleChain: true,
      removeRoots: r.raw.remove_roots_from_chain === true,
      isRoot: isSelfSigned,
    },
    format,
    keyFormat,
  );
  const lease = leaseAnswer(authority, leaseId, built.notAfter);
  return {
    data: { ...data, ...issuedIdentity(serialHex, built.notAfter) },
    warnings: [...answer.warnings],
    ...(lease === undefined ? {} : { lease }),
  };
}
