import { API, type Resource } from '../jsonapi.js';

/** The root outputs of a state document, by name. */
export interface StateOutput {
  name: string;
  value: unknown;
  /** The cty type as terraform writes it in state (`"string"`, `["list","string"]`, …). */
  detailedType: unknown;
  sensitive: boolean;
}

/** A state document's root outputs, sorted by name; an unreadable document has none. */
export function outputsOf(state: string): StateOutput[] {
  let doc: unknown;
  try {
    doc = JSON.parse(state);
  } catch {
    return []; // an unreadable document has no outputs; its upload refused non-JSON already
  }
  const outputs = (doc as { outputs?: unknown } | null)?.outputs;
  if (typeof outputs !== 'object' || outputs === null) return [];
  return Object.entries(outputs as Record<string, Record<string, unknown>>)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, o]) => ({
      name,
      value: o.value ?? null,
      detailedType: o.type ?? null,
      sensitive: o.sensitive === true,
    }));
}

/** An output's id: its state version and its place among the sorted names. */
export const outputId = (svId: string, index: number): string => `wsout-${svId}-${index}`;

export function parseOutputId(id: string): { svId: string; index: number } | null {
  const m = /^wsout-(.+)-(\d+)$/.exec(id);
  return m === null ? null : { svId: m[1]!, index: Number(m[2]) };
}

/** The reference's simple type names, from the cty type. */
function simpleType(detailed: unknown): string {
  const kind: unknown = Array.isArray(detailed) ? (detailed as unknown[])[0] : detailed;
  switch (kind) {
    case 'string':
    case 'number':
      return kind;
    case 'bool':
      return 'boolean';
    case 'list':
    case 'set':
    case 'tuple':
      return 'array';
    case 'map':
    case 'object':
      return 'object';
    default:
      return 'any';
  }
}

/** A `state-version-outputs` resource; a sensitive value is shown only when `reveal`. */
export function presentOutput(id: string, o: StateOutput, reveal: boolean): Resource {
  return {
    id,
    type: 'state-version-outputs',
    attributes: {
      name: o.name,
      sensitive: o.sensitive,
      type: simpleType(o.detailedType),
      value: o.sensitive && !reveal ? null : o.value,
      'detailed-type': o.detailedType,
    },
    links: { self: `${API}/state-version-outputs/${id}` },
  };
}
