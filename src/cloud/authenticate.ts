import type { Principal } from './context.js';
import { arn } from './context.js';
import { CloudError } from './errors.js';
import { parsePolicy } from './policy.js';
import { managedDocument } from './permissions.js';
import { parseAuthorization, verifySignature } from './sigv4.js';
import type { SignedRequest } from './sigv4.js';
import type { CloudStore, KeyRow, SessionRow } from './store.js';

const INVALID_TOKEN = 'The security token included in the request is invalid.';

/** Rebuilds the session policies stored with temporary credentials. */
function sessionPolicies(store: CloudStore, s: SessionRow): Principal['sessionPolicies'] {
  const arns = JSON.parse(s.policy_arns) as string[];
  if (s.policy === null && arns.length === 0) return null;
  const docs = [
    ...(s.policy === null ? [] : [s.policy]),
    ...arns.flatMap((a) => managedDocument(store, a) ?? []),
  ];
  return docs.map((d) => parsePolicy(d));
}

function sessionPrincipal(
  store: CloudStore,
  s: SessionRow,
  now: Date,
  token: string | undefined,
): Principal {
  if (token === undefined || !store.tokenMatches(token, s.token_hmac)) {
    throw new CloudError('InvalidClientTokenId', INVALID_TOKEN);
  }
  if (new Date(s.expiration).getTime() <= now.getTime()) {
    throw new CloudError('ExpiredToken', 'The security token included in the request is expired');
  }
  return {
    kind: s.kind,
    arn: s.arn,
    userId: s.user_id,
    accessKeyId: s.access_key_id,
    userName: s.user_name,
    roleName: s.role_name,
    sessionPolicies: sessionPolicies(store, s),
  };
}

/**
 * Finds who signed the request and checks the signature (SigV4, any region in the scope, the
 * service named by the endpoint). Throws the AWS code for each way this can fail.
 */
export async function authenticate(
  store: CloudStore,
  account: string,
  req: SignedRequest,
  service: 'iam' | 'sts',
  now: Date,
): Promise<Principal> {
  const header = req.headers.authorization;
  if (!header) {
    throw new CloudError('MissingAuthenticationToken', 'Request is missing Authentication Token');
  }
  const auth = parseAuthorization(header);
  if (auth.service !== service) {
    throw new CloudError(
      'SignatureDoesNotMatch',
      `Credential should be scoped to correct service: '${service}'. `,
    );
  }
  const token = req.headers['x-amz-security-token'];
  const session = store.get<SessionRow>(
    'SELECT * FROM sessions WHERE access_key_id = ?',
    auth.accessKeyId,
  );
  if (session) {
    const principal = sessionPrincipal(store, session, now, token);
    await verifySignature(req, auth, store.unseal(session.secret), now);
    return principal;
  }
  const key = store.get<KeyRow>('SELECT * FROM access_keys WHERE id = ?', auth.accessKeyId);
  const user = key ? store.user(key.user_name) : undefined;
  if (!key || !user || key.status !== 'Active' || token !== undefined) {
    throw new CloudError('InvalidClientTokenId', INVALID_TOKEN);
  }
  await verifySignature(req, auth, store.unseal(key.secret), now);
  return {
    kind: 'user',
    arn: arn.user(account, user.path, user.name),
    userId: user.id,
    accessKeyId: key.id,
    userName: user.name,
    roleName: null,
    sessionPolicies: null,
  };
}
