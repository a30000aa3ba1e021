import type { Json } from './types.js';

/**
 * The provider schemas the terraform CLI needs to render a cloud plan (`terraform show` of a saved
 * plan, which reads `json-output-redacted`): the reference serves that document with
 * `provider_schemas`, and the CLI looks every changed resource's type up there. Keel knows
 * `terraform_data`'s schema exactly; for any other type it declares the attributes the plan shows
 * as `dynamic`, which the CLI renders from the values themselves.
 */
const TERRAFORM_DATA_SCHEMA = {
  version: 0,
  block: {
    attributes: {
      id: { type: 'string', description_kind: 'plain', computed: true },
      input: { type: 'dynamic', description_kind: 'plain', optional: true },
      output: { type: 'dynamic', description_kind: 'plain', computed: true },
      triggers_replace: { type: 'dynamic', description_kind: 'plain', optional: true },
    },
    description_kind: 'plain',
  },
};

interface Change {
  type?: unknown;
  provider_name?: unknown;
  change?: { before?: unknown; after?: unknown };
}

const keysOf = (v: unknown): string[] =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.keys(v) : [];

/** The plan JSON with `provider_schemas` (and the format versions) for the CLI's renderer. */
export function withProviderSchemas(plan: Json): Json {
  if (plan === null || typeof plan !== 'object' || Array.isArray(plan)) return plan;
  if ('provider_schemas' in plan) return plan;
  const changes = [
    ...(Array.isArray(plan.resource_changes) ? plan.resource_changes : []),
    ...(Array.isArray(plan.resource_drift) ? plan.resource_drift : []),
  ] as Change[];
  const schemas: Record<string, { provider: unknown; resource_schemas: Record<string, unknown> }> =
    {};
  for (const c of changes) {
    if (typeof c.type !== 'string' || typeof c.provider_name !== 'string') continue;
    const provider = (schemas[c.provider_name] ??= {
      provider: { version: 0, block: { description_kind: 'plain' } },
      resource_schemas: {},
    });
    if (c.type === 'terraform_data') {
      provider.resource_schemas[c.type] = TERRAFORM_DATA_SCHEMA;
      continue;
    }
    const known = (provider.resource_schemas[c.type] ?? {
      version: 0,
      block: { attributes: {}, description_kind: 'plain' },
    }) as { block: { attributes: Record<string, unknown> } };
    for (const key of [...keysOf(c.change?.before), ...keysOf(c.change?.after)])
      known.block.attributes[key] ??= {
        type: 'dynamic',
        description_kind: 'plain',
        optional: true,
      };
    provider.resource_schemas[c.type] = known;
  }
  return {
    plan_format_version: '1.2',
    provider_format_version: '1.0',
    ...plan,
    provider_schemas: schemas as Json,
  };
}
