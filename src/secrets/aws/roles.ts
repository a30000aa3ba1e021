import { NotFoundError } from '../../core/errors.js';
import type { AuditMetadata } from '../../core/events.js';
import { roleDecider } from './commands.js';
import type { EngineDeps } from './deps.js';
import type { MountRef } from './events.js';
import { roleStream } from './events.js';
import type { RoleEvent } from './events.js';
import type { FieldData } from '../fields.js';
import type { ROLE } from './paths.js';
import type { RoleEntry } from './role-schema.js';
import { applyRoleWrite } from './role-schema.js';

/** Roles: upsert with validation, read, list, delete. */
export class RoleService {
  constructor(private readonly d: EngineDeps) {}

  /** POST roles/:name; returns the role's warnings. */
  async write(
    mount: MountRef,
    name: string,
    raw: FieldData<typeof ROLE.fields>,
    metadata: AuditMetadata,
  ): Promise<string[]> {
    const existing = this.d.reads.role(mount.accessor, name);
    const { role, warnings } = applyRoleWrite(existing, raw);
    await this.d.core.handler.handle(
      roleStream(mount.accessor, name),
      roleDecider,
      (): RoleEvent[] => [{ type: 'AwsRoleWritten', data: { mount, name, role } }],
      metadata,
    );
    return warnings;
  }

  read(mount: MountRef, name: string): RoleEntry | null {
    return this.d.reads.role(mount.accessor, name);
  }

  list(mount: MountRef): string[] {
    return this.d.reads.roleNames(mount.accessor);
  }

  /** DELETE roles/:name: 404 when absent, as the spec says. Leases of the role stay (use revoke-prefix). */
  async delete(mount: MountRef, name: string, metadata: AuditMetadata): Promise<void> {
    if (!this.d.reads.role(mount.accessor, name))
      throw new NotFoundError(`role "${name}" not found`);
    await this.d.core.handler.handle(
      roleStream(mount.accessor, name),
      roleDecider,
      (): RoleEvent[] => [{ type: 'AwsRoleDeleted', data: { mount, name } }],
      metadata,
    );
  }
}
