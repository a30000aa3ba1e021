import { ValidationError } from '../../core/errors.js';

/** A state document's own serial, lineage and terraform version; a 422 when it is not one. */
export function stateFacts(state: string): {
  serial: number | null;
  lineage: string | null;
  engineVersion: string | null;
} {
  let doc: unknown;
  try {
    doc = JSON.parse(state);
  } catch {
    throw new ValidationError('the state is not JSON');
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new ValidationError('the state is not a JSON object');
  const d = doc as Record<string, unknown>;
  return {
    serial: typeof d.serial === 'number' ? d.serial : null,
    lineage: typeof d.lineage === 'string' ? d.lineage : null,
    engineVersion: typeof d.terraform_version === 'string' ? d.terraform_version : null,
  };
}
