import type { RunVariable, WorkspaceVariable } from '../executor/types.js';

/**
 * The variables a run gets, by the reference's precedence (highest first): priority global
 * sets, priority project-scoped sets, priority workspace-scoped sets, run variables (`-var`),
 * workspace variables, workspace-scoped sets, project-scoped sets, global sets. A key is a key of
 * one category: a terraform variable and an env variable of the same name do not meet.
 *
 * Two sets of one tier that give a workspace the same key are refused: the reference forbids it
 * for global sets and Keel does not guess an order among the others.
 */

export type VarsetTier = 'global' | 'project' | 'workspace';

/** A set as one workspace sees it: its tier for that workspace, its values unsealed. */
export interface AppliedVarset {
  id: string;
  name: string;
  priority: boolean;
  tier: VarsetTier;
  variables: readonly WorkspaceVariable[];
}

/** Lowest first: later layers override earlier ones. */
const LAYERS: readonly { priority: boolean; tier: VarsetTier }[] = [
  { priority: false, tier: 'global' },
  { priority: false, tier: 'project' },
  { priority: false, tier: 'workspace' },
];
const PRIORITY_LAYERS: readonly { priority: boolean; tier: VarsetTier }[] = [
  { priority: true, tier: 'workspace' },
  { priority: true, tier: 'project' },
  { priority: true, tier: 'global' },
];

const slot = (v: { category: string; key: string }) => `${v.category}\u0000${v.key}`;

/** One tier's sets merged; a key two of them give is refused, naming both. */
function layer(sets: readonly AppliedVarset[]): Map<string, WorkspaceVariable> {
  const out = new Map<string, { from: AppliedVarset; variable: WorkspaceVariable }>();
  for (const set of sets) {
    for (const variable of set.variables) {
      const other = out.get(slot(variable));
      if (other !== undefined)
        throw new Error(
          `${variable.category} variable ${variable.key} is set by variable sets ${other.from.name} (${other.from.id}) and ${set.name} (${set.id}) at the same scope${set.priority ? ', both priority' : ''}; Keel does not choose between them: remove it from one`,
        );
      out.set(slot(variable), { from: set, variable });
    }
  }
  return new Map([...out].map(([k, v]) => [k, v.variable]));
}

/** Run variables less the terraform variables a priority set gives (those override `-var`). */
export function withoutPriorityOverrides(
  sets: readonly { priority: boolean; variables: readonly { key: string; category: string }[] }[],
  run: readonly RunVariable[],
): RunVariable[] {
  const keys = new Set(
    sets
      .filter((s) => s.priority)
      .flatMap((s) => s.variables.filter((v) => v.category === 'terraform').map((v) => v.key)),
  );
  return run.filter((v) => !keys.has(v.key));
}

/**
 * The run's workspace-level variables (what the driver receives as workspace variables) and its
 * run variables less those a priority set overrides.
 */
export function assembleVariables(
  workspace: readonly WorkspaceVariable[],
  sets: readonly AppliedVarset[],
  run: readonly RunVariable[],
): { workspace: WorkspaceVariable[]; run: RunVariable[] } {
  const of = (l: { priority: boolean; tier: VarsetTier }) =>
    layer(sets.filter((s) => s.priority === l.priority && s.tier === l.tier));
  const merged = new Map<string, WorkspaceVariable>();
  for (const l of LAYERS) for (const [k, v] of of(l)) merged.set(k, v);
  for (const v of workspace) merged.set(slot(v), v);
  const priority = new Map<string, WorkspaceVariable>();
  for (const l of PRIORITY_LAYERS) for (const [k, v] of of(l)) priority.set(k, v);
  for (const [k, v] of priority) merged.set(k, v);
  return {
    workspace: [...merged.values()].sort((a, b) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : a.category < b.category ? -1 : 1,
    ),
    run: withoutPriorityOverrides(sets, run),
  };
}
