import { z } from 'zod';
import { ValidationError } from '../../core/errors.js';
import { parseJson } from '../../core/json.js';

/**
 * What Keel reads of a terraform state document a client or terraform wrote: each field is
 * optional (a state may omit it), but one that is there must have its type. Anything else in the
 * document is kept as it is.
 */
export const stateDocumentSchema = z.looseObject({
  version: z.number().int().optional(),
  serial: z.number().int().min(0).optional(),
  lineage: z.string().optional(),
  terraform_version: z.string().optional(),
  outputs: z
    .record(
      z.string(),
      z.looseObject({ value: z.unknown(), type: z.unknown(), sensitive: z.boolean().optional() }),
    )
    .optional(),
  resources: z.array(z.looseObject({})).optional(),
});

/**
 * A state document's own serial, lineage, terraform version and number of resources; a 422
 * naming the bad field when it is not JSON or not a state document.
 */
export function stateFacts(state: string): {
  serial: number | null;
  lineage: string | null;
  engineVersion: string | null;
  resources: number;
} {
  const doc = parseJson(stateDocumentSchema, state);
  if (!doc.ok)
    throw new ValidationError(`the state is not a terraform state document: ${doc.error}`);
  return {
    serial: doc.value.serial ?? null,
    lineage: doc.value.lineage ?? null,
    engineVersion: doc.value.terraform_version ?? null,
    resources: doc.value.resources?.length ?? 0,
  };
}
