import { describe, expect, it } from 'vitest';
import { ForbiddenError, ValidationError } from '../../../src/core/errors.js';
import { systemMetadata } from '../../../src/core/events.js';
import type { Core } from '../../../src/context.js';
import { createSysCommands } from '../../../src/secrets/sys/commands.js';
import { spec } from '../../support/decider-spec.js';

/**
 * The sys commands (tokens, ACL policies, mounts), given what exists: what each appends, what is
 * answered idempotently with nothing appended, and what is refused with nothing appended.
 */

const meta = systemMetadata('spec');
const sys = (core: Core) => createSysCommands(core);
const token = {
  policies: ['b', 'a', 'a'],
  displayName: 'ci',
  ttlSeconds: 60,
  parentAccessor: null,
  meta: {},
};
const aws = { path: 'cloud/', type: 'aws', description: '', config: {} } as Parameters<
  ReturnType<typeof createSysCommands>['enableMount']
>[0];

describe('sys commands', () => {
  it('creates a token with its policies deduplicated and sorted, never its secret', async () => {
    const s = spec();
    let secret = '';
    await s
      .whenAsync(async (core) => {
        secret = (await sys(core).createToken(token, meta)).token;
      })
      .then([
        {
          type: 'SecretsTokenCreated',
          data: { policies: ['a', 'b'], displayName: 'ci', expiresAt: '2026-01-01T00:01:00.000Z' },
        },
      ]);
    expect(JSON.stringify([...s.core.store.readAll(0, 10)])).not.toContain(secret);
  });

  it('revokes a token once; revoking it again, or one never made, appends nothing', async () => {
    const s = spec();
    let accessor = '';
    await s
      .whenAsync(async (core) => {
        accessor = (await sys(core).createToken(token, meta)).data.accessor;
      })
      .then([{ type: 'SecretsTokenCreated' }]);
    const revoke = (who: () => string) => (core: Core) =>
      core.handler.atomically(() => sys(core).revokeTokenSync(who(), meta));
    await s
      .whenAsync(revoke(() => accessor))
      .then([{ type: 'SecretsTokenRevoked', data: { accessor } }]);
    await s.whenAsync(revoke(() => accessor)).then([]);
    await spec()
      .whenAsync(revoke(() => 'nobody'))
      .then([]);
  });

  it('refuses to write the root policy or delete root and default; deleting a missing one appends nothing', async () => {
    await spec()
      .whenAsync((core) => sys(core).writePolicy('root', 'path "*" {}', [], meta))
      .refused(ValidationError, 'cannot update "root" policy');
    for (const name of ['root', 'default'])
      await spec()
        .whenAsync((core) => sys(core).deletePolicy(name, meta))
        .refused(ValidationError, `cannot delete "${name}" policy`);
    const s = spec();
    await s
      .whenAsync((core) => sys(core).writePolicy('ops', 'path "*" {}', [], meta))
      .then([{ type: 'AclPolicyWritten', data: { name: 'ops' } }]);
    await s
      .whenAsync((core) => sys(core).deletePolicy('ops', meta))
      .then([{ type: 'AclPolicyDeleted' }]);
    await s.whenAsync((core) => sys(core).deletePolicy('ops', meta)).then([]);
  });

  it('mounts an engine at a free path; refuses reserved paths and paths inside or around a mount', async () => {
    await spec()
      .whenAsync((core) => sys(core).enableMount(aws, () => ['aws/', 'pki/'], meta))
      .then([{ type: 'MountEnabled', data: { path: 'cloud/', type: 'aws' } }]);
    await spec()
      .whenAsync((core) => sys(core).enableMount({ ...aws, path: 'sys/x/' }, () => [], meta))
      .refused(ValidationError, 'cannot mount under reserved path "sys/x/"');
    await spec()
      .whenAsync((core) =>
        sys(core).enableMount({ ...aws, path: 'aws/inner/' }, () => ['aws/'], meta),
      )
      .refused(ValidationError, 'path is already in use at aws/');
    await spec()
      .whenAsync((core) => sys(core).enableMount({ ...aws, path: 'a/' }, () => ['a/b/'], meta))
      .refused(ValidationError, 'path is already in use at a/b/');
  });

  it('spends a limited token one use at a time; the last is -1; a token used up or unlimited', async () => {
    const s = spec();
    let accessor = '';
    let left = 0;
    const use = (core: Core) =>
      sys(core)
        .useToken(accessor, meta)
        .then((n) => {
          left = n;
        });
    await s
      .whenAsync(async (core) => {
        accessor = (await sys(core).createToken({ ...token, numUses: 2 }, meta)).data.accessor;
      })
      .then([{ type: 'SecretsTokenCreated', data: { numUses: 2 } }]);
    await s.whenAsync(use).then([{ type: 'SecretsTokenUsed', data: { accessor, usesLeft: 1 } }]);
    expect(left).toBe(1);
    await s.whenAsync(use).then([{ type: 'SecretsTokenUsed', data: { accessor, usesLeft: -1 } }]);
    expect(left).toBe(-1);
    await s.whenAsync(use).refused(ForbiddenError, 'permission denied');
    // A token without a limit appends nothing when used; one never made is refused.
    await s
      .whenAsync(async (core) => {
        accessor = (await sys(core).createToken(token, meta)).data.accessor;
      })
      .then([{ type: 'SecretsTokenCreated' }]);
    await s.whenAsync(use).then([]);
    expect(left).toBe(0);
    accessor = 'nobody';
    await s.whenAsync(use).refused(ForbiddenError, 'permission denied');
  });
});
