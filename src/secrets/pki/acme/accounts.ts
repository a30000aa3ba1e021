import type { AcmeAccountCreatedData } from '../../../../machines/acme-account.machine.js';
import type { Sealed } from '../../../core/seal.js';
import { directoryName } from './directory.js';
import { keyOf, parseJws, publicJwk, thumbprint, verifyHmacJws, verifyJws } from './jws.js';
import { AcmeProblem, malformed, otherDirectory, unauthorized } from './problem.js';
import { accountOf, asGet, type AcmeReply, type AcmeRequest } from './protocol.js';
import { accountUrl, accountView, orderUrl } from './present.js';
import type { AcmeService } from './service.js';

function contactOf(payload: Record<string, unknown>): string[] {
  const c = payload.contact;
  if (c === undefined) return [];
  if (!Array.isArray(c) || c.some((x) => typeof x !== 'string'))
    throw malformed('contact must be a list of URLs');
  for (const x of c as string[]) {
    // RFC 8555 §7.3: a scheme the server does not support, and a mailto: that is no address.
    if (!/^mailto:/i.test(x))
      throw new AcmeProblem(
        'unsupportedContact',
        `unsupported contact ${JSON.stringify(x)}; use mailto:`,
      );
    if (!/^mailto:[^@\s,]+@[^@\s,]+$/.test(x))
      throw new AcmeProblem(
        'invalidContact',
        `contact ${JSON.stringify(x)} is not an e-mail address`,
      );
  }
  return c as string[];
}

/**
 * An external account binding (RFC 8555 §7.3.4) whose HMAC verifies under the EAB key it names.
 * The signature check is the only thing that waits; `checkBinding` then decides on the store's
 * state with nothing in between.
 */
async function verifiedBinding(service: AcmeService, req: AcmeRequest, binding: unknown) {
  const eab = parseJws(Buffer.from(JSON.stringify(binding)));
  const kid = eab.protected.kid;
  if (
    typeof kid !== 'string' ||
    eab.protected.jwk !== undefined ||
    eab.protected.nonce !== undefined
  )
    throw malformed('the external account binding must name its key (kid) and carry no nonce');
  if (eab.protected.url !== req.jws.protected.url)
    throw unauthorized('the external account binding is for another URL');
  const row = service.q.eab(req.mount, kid);
  if (!row) throw unauthorized('unknown external account binding key');
  const key = Buffer.from(
    service.authority.core.sealer.unseal(JSON.parse(row.key) as Sealed),
    'base64url',
  );
  await verifyHmacJws(eab, key);
  return { eab, kid };
}

/** Checks a verified binding against the store and the account key; returns the EAB key id. */
function checkBinding(
  service: AcmeService,
  req: AcmeRequest,
  jwk: Record<string, string>,
  { eab, kid }: Awaited<ReturnType<typeof verifiedBinding>>,
): string {
  const row = service.q.eab(req.mount, kid);
  if (!row) throw unauthorized('unknown external account binding key');
  if (row.account_id) throw unauthorized('the external account binding key was already used');
  if (!eab.payload || thumbprint(publicJwk(eab.payload)) !== thumbprint(jwk))
    throw unauthorized('the external account binding is for another account key');
  // A key binds accounts only in the directory it was made for (the reference's words).
  if (row.directory !== directoryName(req.dir))
    throw unauthorized(
      `failed to verify eab: the key was made for the directory ${row.directory || '(the mount)'}acme/`,
    );
  return kid;
}

/**
 * `new-account` (RFC 8555 §7.3): find by key, or create (with a binding when the policy says).
 * A key has one account per mount, which belongs to the directory it was made through: through
 * any other directory the key is refused, not registered again.
 */
export async function newAccount(service: AcmeService, req: AcmeRequest): Promise<AcmeReply> {
  const sent = (req.payload ?? {}).externalAccountBinding;
  const verified = sent === undefined ? undefined : await verifiedBinding(service, req, sent);
  return service.authority.run(() => register(service, req, verified));
}

/** `new-account` after the binding's signature: every decision, on the store as it is now. */
function register(
  service: AcmeService,
  req: AcmeRequest,
  verified: Awaited<ReturnType<typeof verifiedBinding>> | undefined,
): AcmeReply {
  const jwk = req.jwk!;
  const payload = req.payload ?? {};
  const print = thumbprint(jwk);
  const existing = service.q.accountByKey(req.mount, print);
  if (existing) {
    if (existing.directory !== directoryName(req.dir)) throw otherDirectory();
    if (existing.status !== 'valid') throw unauthorized(`the account is ${existing.status}`);
    return {
      status: 200,
      body: accountView(req.base, existing),
      location: accountUrl(req.base, existing.account_id),
    };
  }
  if (payload.onlyReturnExisting === true)
    throw new AcmeProblem('accountDoesNotExist', 'no account exists with this key');
  if (payload.termsOfServiceAgreed === false)
    throw malformed('the terms of service must be agreed to');
  const contact = contactOf(payload);
  const policy = service.config(req.mount).eab_policy;
  if (verified === undefined && policy !== 'not-required')
    throw new AcmeProblem(
      'externalAccountRequired',
      'this server requires an external account binding',
    );
  const eabId = verified === undefined ? '' : checkBinding(service, req, jwk, verified);
  const accountId = service.authority.core.ids.uuid();
  const data: AcmeAccountCreatedData = {
    mount: req.mount,
    accountId,
    jwk,
    thumbprint: print,
    contact,
    directory: directoryName(req.dir),
    eabId,
    createdAt: service.now().toISOString(),
  };
  service.authority.atomically(() => {
    service.record.account(req.mount, accountId, { type: 'AcmeAccountCreated', data }, req.meta, {
      newStream: true,
    });
    if (eabId) {
      service.record.settings(
        req.mount,
        { type: 'AcmeEabKeyUsed', data: { mount: req.mount, eabId, accountId } },
        req.meta,
      );
    }
  });
  const row = service.q.account(req.mount, accountId)!;
  return {
    status: 201,
    body: accountView(req.base, row),
    location: accountUrl(req.base, accountId),
  };
}

/** `account/:id` (RFC 8555 §7.3.2, §7.3.6): read, update the contact, or deactivate. */
export function updateAccount(service: AcmeService, req: AcmeRequest, id: string): AcmeReply {
  const account = accountOf(req);
  if (account.account_id !== id) throw unauthorized('the request is signed by another account');
  const payload = req.payload;
  const mount = req.mount;
  if (payload?.status !== undefined) {
    if (payload.status !== 'deactivated') throw malformed('an account can only be deactivated');
    service.record.account(
      mount,
      id,
      { type: 'AcmeAccountDeactivated', data: { mount, accountId: id } },
      req.meta,
    );
  } else if (payload?.contact !== undefined) {
    const contact = contactOf(payload);
    service.record.account(
      mount,
      id,
      { type: 'AcmeAccountUpdated', data: { mount, accountId: id, contact } },
      req.meta,
    );
  }
  return {
    body: accountView(req.base, service.q.account(mount, id)!),
    location: accountUrl(req.base, id),
  };
}

/** `account/:id/orders` (RFC 8555 §7.1.2.1). */
export function accountOrders(service: AcmeService, req: AcmeRequest, id: string): AcmeReply {
  asGet(req);
  if (accountOf(req).account_id !== id)
    throw unauthorized('the request is signed by another account');
  return { body: { orders: service.q.orders(req.mount, id).map((o) => orderUrl(req.base, o)) } };
}

/** `key-change` (RFC 8555 §7.3.5): the inner JWS, signed by the new key, names the account. */
export async function keyChange(service: AcmeService, req: AcmeRequest): Promise<AcmeReply> {
  const signer = accountOf(req);
  if (!req.payload) throw malformed('key-change needs an inner JWS');
  const inner = parseJws(Buffer.from(JSON.stringify(req.payload)));
  if (
    inner.protected.jwk === undefined ||
    inner.protected.kid !== undefined ||
    inner.protected.nonce !== undefined
  )
    throw malformed('the inner JWS must carry the new key (jwk) and no nonce');
  if (inner.protected.url !== req.jws.protected.url)
    throw malformed('the inner JWS is for another URL');
  const jwk = publicJwk(inner.protected.jwk);
  await verifyJws(inner, keyOf(jwk));
  return service.authority.run(() => {
    // Decide on the account as it is when the command runs.
    const account = service.q.account(req.mount, signer.account_id);
    if (!account || account.status !== 'valid' || account.jwk !== signer.jwk)
      throw unauthorized('the account changed while the request was verified');
    const body = inner.payload ?? {};
    if (body.account !== accountUrl(req.base, account.account_id))
      throw malformed('the inner JWS names another account');
    if (thumbprint(publicJwk(body.oldKey)) !== account.thumbprint)
      throw unauthorized('oldKey is not the account key');
    const print = thumbprint(jwk);
    const holder = service.q.accountByKey(req.mount, print);
    if (holder && holder.directory !== account.directory) throw otherDirectory();
    if (holder) {
      throw new AcmeProblem(
        'malformed',
        'the new key already belongs to an account',
        409,
        accountUrl(req.base, holder.account_id),
      );
    }
    service.record.account(
      req.mount,
      account.account_id,
      {
        type: 'AcmeAccountKeyChanged',
        data: { mount: req.mount, accountId: account.account_id, jwk, thumbprint: print },
      },
      req.meta,
    );
    return {
      body: accountView(req.base, service.q.account(req.mount, account.account_id)!),
      location: accountUrl(req.base, account.account_id),
    };
  });
}
