import { ValidationError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import type { LeaseEvent, LeaseKind } from '../../../machines/lease.machine.js';
import { leaseDecider } from './commands.js';
import type { StsCredentials } from './sts-calls.js';
import { CloudStepError, createIamUser, groupPolicies } from './cloud-calls.js';
import { assumeRole, getFederationToken, getSessionToken } from './sts-calls.js';
import type { EngineDeps } from './deps.js';
import { providerError } from './deps.js';
import type { CloudIntents } from './intents.js';
import type { MountRef } from './events.js';
import { leaseStream } from './events.js';
import type { FieldData } from '../fields.js';
import type { CREDS } from './paths.js';
import type { CredentialType, RoleEntry } from './role-schema.js';
import type { RootService } from './root.js';
import { parseCredsRequest } from './schema.js';
import { DEFAULT_USERNAME_TEMPLATE, generateUsername, normalizeName } from './template/index.js';

/** The STS TTL when neither the request nor the role gives one. */
export const DEFAULT_STS_TTL = 3600;
/** role_session_name is cut to this many characters, as the spec says. */
export const ROLE_SESSION_NAME_MAX = 64;

export interface IssuedCredentials {
  data: Record<string, unknown>;
  leaseId: string;
  leaseDuration: number;
  renewable: boolean;
}

/** What `recordLease` writes as a `LeaseIssued` event: the credentials just made and their window. */
interface LeaseRecord {
  mount: MountRef;
  /** The role's name. */
  role: string;
  kind: LeaseKind;
  leaseId: string;
  /** The IAM user, role session or federated user name; empty for session tokens. */
  username: string;
  accessKeyId: string;
  issuedAt: Date;
  expiresAt: Date;
  maxExpiresAt: Date;
  renewable: boolean;
  metadata: AuditMetadata;
}

/** Whether the provider answered the call (with an error): nothing was made. */
const answered = (e: unknown): boolean =>
  typeof (e as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode === 'number';

/** Picks the credential type for a request path: legacy roles may hold two. */
function typeFor(role: RoleEntry, path: 'creds' | 'sts'): CredentialType {
  const types = role.credentialTypes;
  if (role.prohibitFlexibleCredPath) {
    if (path === 'sts' && types.every((t) => t === 'iam_user')) {
      throw new ValidationError(
        'attempted to retrieve iam_user credentials through the sts path; this is not allowed for legacy roles',
      );
    }
    if (path === 'creds' && !types.includes('iam_user')) {
      throw new ValidationError(
        `attempted to retrieve ${types[0] ?? ''} credentials through the creds path; this is not allowed for legacy roles`,
      );
    }
  }
  if (types.length > 1)
    return path === 'creds' ? 'iam_user' : (types.find((t) => t !== 'iam_user') as CredentialType);
  return types[0] as CredentialType;
}

/** Dynamic credentials for a role: all four types, through the provider's IAM and STS. */
export class CredsService {
  constructor(
    private readonly d: EngineDeps,
    private readonly root: RootService,
    private readonly intents: CloudIntents,
  ) {}

  async issue(
    mount: MountRef,
    name: string,
    path: 'creds' | 'sts',
    raw: FieldData<typeof CREDS.fields>,
    displayName: string,
    metadata: AuditMetadata,
  ): Promise<IssuedCredentials> {
    const role = this.d.reads.role(mount.accessor, name);
    if (!role) throw new ValidationError(`Role "${name}" not found`);
    const input = parseCredsRequest(raw);
    const type = typeFor(role, path);
    const template =
      this.d.reads.config(mount.accessor)?.settings?.usernameTemplate ?? DEFAULT_USERNAME_TEMPLATE;
    const leaseId = `${mount.path}${path}/${name}/${this.d.core.ids.secret(24)}`;
    switch (type) {
      case 'iam_user':
        return this.iamUser(mount, name, role, template, displayName, leaseId, metadata);
      case 'assumed_role':
      case 'federation_token':
      case 'session_token':
        return this.sts(mount, name, role, type, input, template, displayName, leaseId, metadata);
      default: {
        const _never: never = type;
        return _never;
      }
    }
  }

  private async iamUser(
    mount: MountRef,
    name: string,
    role: RoleEntry,
    template: string,
    displayName: string,
    leaseId: string,
    metadata: AuditMetadata,
  ): Promise<IssuedCredentials> {
    const username = generateUsername(
      template,
      { type: 'IAM', displayName, policyName: name },
      this.d.templateEnv,
    );
    const iam = this.d.clientsFor(mount).iam();
    // Recorded first: a process that dies from here on leaves an open intent the next start resolves.
    const intent = await this.intents.record(
      mount,
      { kind: 'iam_user', username, leaseId },
      metadata,
    );
    let key: { accessKeyId: string; secretAccessKey: string };
    try {
      key = await createIamUser(iam, {
        username,
        path: role.userPath,
        permissionsBoundaryArn: role.permissionsBoundaryArn,
        policyArns: role.policyArns,
        policyDocument: role.policyDocument,
        policyName: name,
        groups: role.iamGroups,
        tags: role.iamTags,
      });
    } catch (e) {
      if (!(e instanceof CloudStepError)) throw e;
      // A CreateUser the provider refused made nothing (the name may be someone else's user).
      if (e.step === 'Error creating IAM user' && answered(e.causeError)) {
        await this.intents.settle(intent.intentId, 'undone', metadata);
      } else {
        // A half-built user is removed at once (the reference leaves it to a rollback minutes later).
        await this.intents.undo(intent, metadata);
      }
      throw providerError(e.step, e.causeError);
    }
    const now = this.d.core.clock.now();
    const window = this.root.leaseWindow(mount, now);
    try {
      await this.recordLease({
        mount,
        role: name,
        kind: 'iam_user',
        leaseId,
        username,
        accessKeyId: key.accessKeyId,
        issuedAt: now,
        expiresAt: window.expiresAt,
        maxExpiresAt: window.maxExpiresAt,
        renewable: true,
        metadata,
      });
    } catch (e) {
      await this.intents.undo(intent, metadata);
      throw e;
    }
    await this.intents.settle(intent.intentId, 'completed', metadata);
    return {
      data: { access_key: key.accessKeyId, secret_key: key.secretAccessKey, session_token: null },
      leaseId,
      leaseDuration: window.ttl,
      renewable: true,
    };
  }

  private async sts(
    mount: MountRef,
    name: string,
    role: RoleEntry,
    type: Exclude<CredentialType, 'iam_user'>,
    input: ReturnType<typeof parseCredsRequest>,
    template: string,
    displayName: string,
    leaseId: string,
    metadata: AuditMetadata,
  ): Promise<IssuedCredentials> {
    let seconds = input.ttl ?? (role.defaultStsTtl || DEFAULT_STS_TTL);
    if (role.maxStsTtl > 0 && seconds > role.maxStsTtl) seconds = role.maxStsTtl;
    const clients = this.d.clientsFor(mount);
    let creds: StsCredentials;
    let username: string;
    if (type === 'assumed_role') {
      const roleArn = this.pickRoleArn(role, name, input.roleArn);
      username = input.roleSessionName
        ? normalizeName(input.roleSessionName).slice(0, ROLE_SESSION_NAME_MAX)
        : generateUsername(
            template,
            { type: 'IAM', displayName, policyName: name },
            this.d.templateEnv,
          );
      const policies = await this.policies(mount, role);
      creds = await this.call(() =>
        clients.sts().then((sts) =>
          assumeRole(sts, {
            roleArn,
            sessionName: username,
            seconds,
            policy: policies.document,
            policyArns: policies.arns,
            externalId: role.externalId,
            tags: role.sessionTags,
          }),
        ),
      );
    } else if (type === 'federation_token') {
      const policies = await this.policies(mount, role);
      if (!policies.document && policies.arns.length === 0) {
        throw new ValidationError(
          'must specify at least one of policy_arns or policy_document with federation_token credential_type',
        );
      }
      username = generateUsername(
        template,
        { type: 'STS', displayName: '', policyName: '' },
        this.d.templateEnv,
      );
      creds = await this.call(() =>
        clients.sts().then((sts) =>
          getFederationToken(sts, {
            name: username,
            seconds,
            policy: policies.document,
            policyArns: policies.arns,
          }),
        ),
      );
    } else {
      if (role.mfaSerialNumber && !input.mfaCode) {
        throw new ValidationError('mfa_code is required when the role sets mfa_serial_number');
      }
      username = '';
      creds = await this.call(() =>
        clients.sts().then((sts) =>
          getSessionToken(sts, {
            seconds,
            serialNumber: role.mfaSerialNumber,
            tokenCode: input.mfaCode,
          }),
        ),
      );
    }
    const now = this.d.core.clock.now();
    const ttl = Math.max(0, Math.round((creds.expiration.getTime() - now.getTime()) / 1000));
    await this.recordLease({
      mount,
      role: name,
      kind: type,
      leaseId,
      username,
      accessKeyId: creds.accessKeyId,
      issuedAt: now,
      expiresAt: creds.expiration,
      maxExpiresAt: creds.expiration,
      renewable: false,
      metadata,
    });
    const data: Record<string, unknown> = {
      access_key: creds.accessKeyId,
      secret_key: creds.secretAccessKey,
      session_token: creds.sessionToken,
    };
    if (type !== 'session_token') data.security_token = creds.sessionToken;
    if (type === 'assumed_role') data.arn = creds.arn;
    data.ttl = ttl;
    return { data, leaseId, leaseDuration: ttl, renewable: false };
  }

  private pickRoleArn(role: RoleEntry, name: string, requested: string): string {
    if (requested) {
      if (!role.roleArns.includes(requested)) {
        throw new ValidationError(
          `role_arn "${requested}" not in allowed role arns for Vault role "${name}"`,
        );
      }
      return requested;
    }
    if (role.roleArns.length !== 1)
      throw new ValidationError('did not supply a role_arn parameter and unable to determine one');
    return role.roleArns[0] as string;
  }

  private async policies(
    mount: MountRef,
    role: RoleEntry,
  ): Promise<{ document: string; arns: string[] }> {
    if (role.iamGroups.length === 0)
      return { document: role.policyDocument, arns: [...role.policyArns] };
    try {
      return await groupPolicies(
        this.d.clientsFor(mount).iam(),
        role.iamGroups,
        role.policyDocument,
        role.policyArns,
      );
    } catch (e) {
      throw providerError('Error reading group policies', e);
    }
  }

  private async call(run: () => Promise<StsCredentials>): Promise<StsCredentials> {
    try {
      return await run();
    } catch (e) {
      if (e instanceof CloudStepError) throw providerError(e.step, e.causeError);
      throw e;
    }
  }

  private async recordLease(lease: LeaseRecord): Promise<void> {
    const { leaseId, metadata } = lease;
    await this.d.core.handler.handle(
      leaseStream(leaseId),
      leaseDecider,
      (): LeaseEvent[] => [
        {
          type: 'LeaseIssued',
          data: {
            leaseId,
            mount: lease.mount,
            role: lease.role,
            kind: lease.kind,
            username: lease.username,
            accessKeyId: lease.accessKeyId,
            issuedAt: lease.issuedAt.toISOString(),
            expiresAt: lease.expiresAt.toISOString(),
            maxExpiresAt: lease.maxExpiresAt.toISOString(),
            renewable: lease.renewable,
            ...(metadata.actor === null ? {} : { tokenAccessor: metadata.actor.accessor }),
          },
        },
      ],
      metadata,
    );
  }
}
