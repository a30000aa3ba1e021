import { isKeelError } from '../../../core/errors.js';
import { revoke } from '../revoke.js';
import { parseCertificate } from '../../../x509/parse.js';
import { spkiDer } from '../../../x509/keys.js';
import { base64urlBytes, keyOf } from './jws.js';
import { AcmeProblem, malformed, otherDirectory, unauthorized } from './problem.js';
import { directoryName } from './directory.js';
import type { AcmeReply, AcmeRequest } from './protocol.js';
import type { AcmeService } from './service.js';
import { parseFields } from '../../fields.js';
import { REVOKE_PATH } from '../paths.js';

/**
 * `revoke-cert` (RFC 8555 §7.6): signed by the account that ordered the certificate, or by the
 * certificate's own key (a jwk request). Revocation goes through the engine's revoke, so the CRL
 * is rebuilt as for any other revocation.
 */
export function revokeCert(service: AcmeService, req: AcmeRequest): AcmeReply {
  const der = base64urlBytes(req.payload?.certificate);
  if (der === undefined || der.length === 0) throw malformed('certificate must be base64url DER');
  let cert;
  try {
    cert = parseCertificate(der);
  } catch (err) {
    throw malformed(err instanceof Error ? err.message : String(err));
  }
  const reason = req.payload?.reason;
  if (reason !== undefined && (typeof reason !== 'number' || !Number.isInteger(reason)))
    throw new AcmeProblem('badRevocationReason', 'reason must be an integer');
  if (reason !== undefined && (reason < 0 || reason > 10 || reason === 7))
    throw new AcmeProblem('badRevocationReason', `invalid revocation reason code ${reason}`);
  if (req.account) {
    const order = service.q.orderBySerial(req.mount, cert.serial);
    if (order?.account_id !== req.account.account_id)
      throw unauthorized('the certificate was not ordered by this account');
    if (order.directory !== directoryName(req.dir)) throw otherDirectory('order');
  } else if (!spkiDer(keyOf(req.jwk!)).equals(cert.spki)) {
    throw unauthorized(
      "the JWS is signed by neither the ordering account nor the certificate's key",
    );
  }
  const row = service.authority.q.cert(req.mount, cert.serial);
  if (!row) throw unauthorized('this server did not issue the certificate');
  if (row.revoked_at) throw new AcmeProblem('alreadyRevoked', 'the certificate is already revoked');
  try {
    const out = revoke(
      service.authority,
      req.mount,
      req.meta,
      parseFields(REVOKE_PATH, {
        serial_number: cert.serial,
        ...(reason === undefined ? {} : { reason }),
      }),
    );
    if (out.data === null) throw malformed(out.warnings.join('; '));
  } catch (err) {
    if (isKeelError(err) && err.code === 'validation') throw malformed(err.message);
    throw err;
  }
  return { status: 200 };
}
