import { z } from 'zod';
import { ValidationError } from '../../core/errors.js';
import { parseHcl } from '../../core/hcl.js';
import { describeIssues } from '../../core/json.js';
import type { RunVariable } from '../events.js';

/** Request bodies of the run endpoints. Field documentation lives here (docs/api/runs.md). */

const identifier = (type: string) =>
  z.object({ type: z.literal(type).optional(), id: z.string().min(1) });

const addrs = z.array(z.string().min(1)).describe('resource addresses');

export const createRunBody = z.object({
  data: z.object({
    type: z.literal('runs'),
    attributes: z
      .object({
        'allow-empty-apply': z
          .boolean()
          .optional()
          .describe('apply although the plan has no changes'),
        'allow-config-generation': z
          .boolean()
          .optional()
          .describe('let import blocks generate configuration'),
        'auto-apply': z.boolean().optional().describe('default: the workspace setting'),
        'debugging-mode': z.boolean().optional(),
        'is-destroy': z.boolean().optional(),
        message: z.string().optional(),
        refresh: z.boolean().optional().describe('default true'),
        'refresh-only': z.boolean().optional(),
        'replace-addrs': addrs.optional(),
        'target-addrs': addrs.optional(),
        variables: z.array(z.object({ key: z.string().min(1), value: z.string() })).optional(),
        'plan-only': z
          .boolean()
          .optional()
          .describe('default: the configuration version is speculative'),
        'save-plan': z.boolean().optional(),
        'engine-version': z.string().min(1).optional().describe('only with plan-only'),
        'terraform-version': z.string().min(1).optional().describe('accepted as engine-version'),
      })
      .optional(),
    relationships: z.object({
      workspace: z.object({ data: identifier('workspaces') }),
      'configuration-version': z
        .object({ data: identifier('configuration-versions').nullable() })
        .optional(),
    }),
  }),
});

export type CreateRunBody = z.infer<typeof createRunBody>;

/** An action body is plain JSON: nothing, `{}` or `{"comment": "…"}`. */
export const actionBody = z
  .object({ comment: z.string().nullable().optional() })
  .optional()
  .transform((b) => b?.comment ?? null);

/** Validate with a schema; a failure is a 422 that names every bad field. */
export function validate<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success)
    throw new ValidationError(describeIssues(result.error, '', 'body'), {
      title: 'invalid attribute',
    });
  return result.data;
}

/**
 * Each variable value must be a literal of the configuration language (`"\"text\""`, `3`,
 * `["a"]`), not a reference or an expression: parse it the way the executor will.
 */
export async function checkVariables(variables: RunVariable[]): Promise<void> {
  const seen = new Set<string>();
  for (const [i, v] of variables.entries()) {
    if (!/^[A-Za-z_][A-Za-z0-9_-]*$/.test(v.key))
      throw new ValidationError(
        `/data/attributes/variables/${i}/key: ${JSON.stringify(v.key)} is not a valid variable name`,
      );
    if (seen.has(v.key))
      throw new ValidationError(`/data/attributes/variables/${i}/key: ${v.key} is given twice`);
    seen.add(v.key);
    let parsed: Record<string, unknown>;
    try {
      parsed = await parseHcl('variables.tfvars', `value = ${v.value}\n`);
    } catch {
      throw new ValidationError(
        `/data/attributes/variables/${i}/value: ${JSON.stringify(v.value)} is not a literal value (strings carry their own quotes)`,
      );
    }
    if (JSON.stringify(parsed.value ?? null).includes('${')) {
      throw new ValidationError(
        `/data/attributes/variables/${i}/value: ${JSON.stringify(v.value)} is an expression, not a literal value`,
      );
    }
  }
}
