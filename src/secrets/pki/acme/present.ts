import type { AcmeIdentifier } from './events.js';
import {
  identifierOf,
  type AcmeAccountRow,
  type AcmeOrderRow,
  type AcmeQueries,
} from './projection.js';

/** The wire shapes of ACME objects (RFC 8555 §7.1.2–7.1.5). */
export const accountUrl = (base: string, id: string) => `${base}/account/${id}`;
export const orderUrl = (base: string, id: string) => `${base}/order/${id}`;
export const authzUrl = (base: string, id: string) => `${base}/authorization/${id}`;
export const challengeUrl = (base: string, authzId: string, type: string) =>
  `${base}/challenge/${authzId}/${type}`;

export function accountView(base: string, a: AcmeAccountRow): Record<string, unknown> {
  return {
    status: a.status,
    contact: JSON.parse(a.contact) as string[],
    orders: `${accountUrl(base, a.account_id)}/orders`,
    createdAt: a.created_at,
  };
}

export function orderView(base: string, o: AcmeOrderRow): Record<string, unknown> {
  const error = o.error ? { error: problemOf(o.error) } : {};
  return {
    status: o.status,
    expires: o.expires,
    identifiers: JSON.parse(o.identifiers) as AcmeIdentifier[],
    ...(o.not_before ? { notBefore: o.not_before } : {}),
    ...(o.not_after ? { notAfter: o.not_after } : {}),
    ...error,
    authorizations: (JSON.parse(o.authorizations) as string[]).map((id) => authzUrl(base, id)),
    finalize: `${orderUrl(base, o.order_id)}/finalize`,
    ...(o.status === 'valid' ? { certificate: `${orderUrl(base, o.order_id)}/cert` } : {}),
  };
}

/** A recorded failure (`kind: detail`) as a problem document. */
function problemOf(text: string): { type: string; detail: string } {
  const m = /^(\w+): ([^]*)$/.exec(text);
  return m
    ? { type: `urn:ietf:params:acme:error:${m[1]}`, detail: m[2]! }
    : { type: 'urn:ietf:params:acme:error:serverInternal', detail: text };
}

export function challengeView(
  base: string,
  authzId: string,
  token: string,
  c: { type: string; status: string; validated: string; error: string },
): Record<string, unknown> {
  return {
    type: c.type,
    url: challengeUrl(base, authzId, c.type),
    status: c.status,
    token,
    ...(c.validated ? { validated: c.validated } : {}),
    ...(c.error ? { error: problemOf(c.error) } : {}),
  };
}

export function authzView(
  q: AcmeQueries,
  mount: string,
  base: string,
  authzId: string,
): Record<string, unknown> | undefined {
  const a = q.authz(mount, authzId);
  if (!a) return undefined;
  const identifier = identifierOf(a);
  return {
    identifier: a.wildcard
      ? { ...identifier, value: identifier.value.replace(/^\*\./, '') }
      : identifier,
    status: a.status,
    expires: a.expires,
    challenges: q.challenges(mount, authzId).map((c) => challengeView(base, authzId, a.token, c)),
    ...(a.wildcard ? { wildcard: true } : {}),
  };
}
