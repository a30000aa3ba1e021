import { describe, expect, it } from 'vitest';
import { withProviderSchemas } from '../../../src/runs/executor/plan-schemas.js';

describe('provider schemas for the CLI renderer', () => {
  it('declare terraform_data exactly and other types by the attributes their changes show', () => {
    const out = withProviderSchemas({
      format_version: '1.2',
      resource_changes: [
        {
          type: 'terraform_data',
          provider_name: 'terraform.io/builtin/terraform',
          change: { before: null, after: { input: 'x' } },
        },
        {
          type: 'null_resource',
          provider_name: 'registry.terraform.io/hashicorp/null',
          change: { before: { id: '1' }, after: { id: '1', triggers: { a: 'b' } } },
        },
      ],
    }) as Record<string, unknown>;
    const schemas = out.provider_schemas as Record<
      string,
      {
        resource_schemas: Record<
          string,
          { block: { attributes: Record<string, { type: string }> } }
        >;
      }
    >;
    expect(Object.keys(schemas).sort()).toEqual([
      'registry.terraform.io/hashicorp/null',
      'terraform.io/builtin/terraform',
    ]);
    const data = schemas['terraform.io/builtin/terraform']!.resource_schemas.terraform_data!;
    expect(Object.keys(data.block.attributes).sort()).toEqual([
      'id',
      'input',
      'output',
      'triggers_replace',
    ]);
    const other = schemas['registry.terraform.io/hashicorp/null']!.resource_schemas.null_resource!;
    expect(Object.keys(other.block.attributes).sort()).toEqual(['id', 'triggers']);
    expect(out).toMatchObject({ plan_format_version: '1.2', provider_format_version: '1.0' });
  });

  it('leave a document that already has schemas, and non-objects, as they are', () => {
    const given = { provider_schemas: { x: 1 }, resource_changes: [] };
    expect(withProviderSchemas(given)).toBe(given);
    expect(withProviderSchemas(null)).toBeNull();
  });
});
