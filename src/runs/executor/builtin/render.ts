import type { OutputChange, PlanCounts, RunFlags, StateV4 } from '../types.js';
import { UNKNOWN, jsonEqual } from './expressions.js';
import type { Value } from './expressions.js';
import { known, priorInstances } from './plan.js';
import { providerName } from './schemas.js';
import type { PlanModel, PlannedInstance, PlannedOutput } from './plan.js';

/** The terraform release whose plan format and messages the builtin driver reproduces. */
export const ENGINE_VERSION = '1.9.8';

export { providerName } from './schemas.js';

/** The state file's spelling of the provider of a resource type. */
export const providerConfig = (type: string): string => `provider["${providerName(type)}"]`;

/** Counts as the plan resource reports them; a replacement adds one and destroys one. */
export function planCounts(plan: PlanModel): PlanCounts {
  const counts = { additions: 0, changes: 0, destructions: 0, imports: 0 };
  for (const i of plan.instances) {
    if (i.action === 'create' || i.action === 'replace') counts.additions += 1;
    if (i.action === 'update') counts.changes += 1;
    if (i.action === 'delete' || i.action === 'replace') counts.destructions += 1;
    if (i.action === 'import') counts.imports += 1;
  }
  const outputChanges = plan.outputs.some((o) => outputActions(o)[0] !== 'no-op');
  const hasChanges =
    counts.additions + counts.changes + counts.destructions + counts.imports > 0 || outputChanges;
  return { ...counts, hasChanges };
}

export function outputActions(o: PlannedOutput): OutputChange['actions'] {
  const actions = valueActions(o);
  // Its sensitivity changing alone is an update too (terraform's plan JSON and exit code say so,
  // though its text says "No changes"): applied, the state takes the new sensitivity.
  return actions[0] === 'no-op' && o.before !== undefined && o.beforeSensitive !== o.sensitive
    ? ['update']
    : actions;
}

/** The change of an output's value, which the plan's text shows. */
function valueActions(o: PlannedOutput): OutputChange['actions'] {
  // An output absent from the state is null to terraform: null again is no change.
  if (o.before === undefined) return o.after === null ? ['no-op'] : ['create'];
  if (o.after === undefined) return ['delete'];
  if (o.after === UNKNOWN) return ['update'];
  const after = known(o.after);
  return after.unknown === false && jsonEqual(after.value, o.before) ? ['no-op'] : ['update'];
}

/** A value the way terraform's plan renderer writes it on one line. */
export function show(value: Value | undefined): string {
  if (value === undefined) return 'null';
  if (value === UNKNOWN) return '(known after apply)';
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `[${value.map((v) => show(v)).join(', ')}]`;
  const entries = Object.entries(value);
  return entries.length === 0
    ? '{}'
    : `{ ${entries.map(([k, v]) => `${k} = ${show(v)}`).join(', ')} }`;
}

const SYMBOLS = {
  create: '+',
  update: '~',
  delete: '-',
  replace: '-/+',
  import: ' ',
  'no-op': ' ',
} as const;
const LEGEND = {
  create: '  + create',
  update: '  ~ update in-place',
  delete: '  - destroy',
  replace: '-/+ destroy and then create replacement',
  import: '',
  'no-op': '',
} as const;

function headline(i: PlannedInstance, configured: boolean): string[] {
  switch (i.action) {
    case 'create':
      return [`  # ${i.address} will be created`];
    case 'update':
      return [`  # ${i.address} will be updated in-place`];
    case 'delete':
      return configured
        ? [`  # ${i.address} will be destroyed`]
        : [
            `  # ${i.address} will be destroyed`,
            `  # (because ${i.address} is not in configuration)`,
          ];
    case 'replace':
      return [
        i.reason === 'replace_because_tainted'
          ? `  # ${i.address} is tainted, so must be replaced`
          : i.reason === 'replace_because_cannot_update'
            ? `  # ${i.address} must be replaced`
            : `  # ${i.address} will be replaced, as requested`,
      ];
    case 'import':
      return [
        `  # ${i.address} will be imported`,
        ...(i.generatedConfig ? ['  #  (config will be generated)'] : []),
      ];
    case 'no-op':
      return [];
    default: {
      const _never: never = i.action;
      return _never;
    }
  }
}

function attributeLines(i: PlannedInstance): string[] {
  const before = i.before ?? {};
  const after = (
    i.after && typeof i.after === 'object' && !Array.isArray(i.after) ? i.after : {}
  ) as Record<string, Value>;
  const keys = [
    ...new Set([
      ...Object.keys(i.action === 'delete' ? before : after),
      ...(i.action === 'delete' ? [] : Object.keys(before)),
    ]),
  ].sort();
  const width = Math.max(0, ...keys.map((k) => k.length));
  const lines: string[] = [];
  let hidden = 0;
  for (const key of keys) {
    const name = key.padEnd(width);
    const a = after[key];
    const b = before[key];
    switch (i.action) {
      case 'create':
        lines.push(`      + ${name} = ${show(a)}`);
        break;
      case 'delete':
        lines.push(`      - ${name} = ${show(b)} -> null`);
        break;
      case 'import':
        lines.push(`        ${name} = ${show(a)}`);
        break;
      case 'update':
      case 'replace':
      case 'no-op':
        if (b === undefined) lines.push(`      + ${name} = ${show(a)}`);
        else if (a === undefined) lines.push(`      - ${name} = ${show(b)} -> null`);
        else if (a !== UNKNOWN && jsonEqual(known(a).value, b) && known(a).unknown === false) {
          if (key === 'id') lines.push(`        ${name} = ${show(b)}`);
          else hidden += 1;
        } else lines.push(`      ~ ${name} = ${show(b)} -> ${show(a)}`);
        break;
      default: {
        const _never: never = i.action;
        return _never;
      }
    }
  }
  if (hidden > 0)
    lines.push(`        # (${hidden} unchanged attribute${hidden === 1 ? '' : 's'} hidden)`);
  return lines;
}

function warningLines(warnings: readonly string[]): string[] {
  return warnings.flatMap((w) => {
    const at = w.indexOf(': ');
    return at < 0 ? ['', `Warning: ${w}`] : ['', `Warning: ${w.slice(0, at)}`, '', w.slice(at + 2)];
  });
}

/** The log of a plan, as `terraform plan -no-color` writes it. */
export function planLog(
  plan: PlanModel,
  state: StateV4 | null,
  flags: RunFlags,
  configured: ReadonlySet<string>,
): string[] {
  const lines: string[] = [];
  if (flags.refresh || flags.refreshOnly) {
    for (const [address, p] of priorInstances(state)) {
      const id = p.instance.attributes.id;
      lines.push(`${address}: Refreshing state...${typeof id === 'string' ? ` [id=${id}]` : ''}`);
    }
    if (lines.length > 0) lines.push('');
  }
  const changed = plan.instances.filter((i) => i.action !== 'no-op');
  const outputs = plan.outputs.filter((o) => valueActions(o)[0] !== 'no-op');
  const counts = planCounts(plan);
  if (changed.length === 0) {
    if (outputs.length > 0) {
      lines.push(
        'Changes to Outputs:',
        ...outputLines(outputs),
        '',
        'You can apply this plan to save these new output values to the Terraform state, without changing any real infrastructure.',
      );
    } else if (flags.isDestroy) {
      lines.push(
        'No changes. No objects need to be destroyed.',
        '',
        'Either you have not created any objects yet or the existing objects were already deleted outside of Terraform.',
      );
    } else if (flags.refreshOnly) {
      lines.push(
        'No changes. Your infrastructure still matches the configuration.',
        '',
        'Terraform has checked that the real remote objects still match the result of your most recent changes, and found no differences.',
      );
    } else {
      lines.push(
        'No changes. Your infrastructure matches the configuration.',
        '',
        'Terraform has compared your real infrastructure against your configuration and found no differences, so no changes are needed.',
      );
    }
    lines.push(...warningLines(plan.warnings));
    return lines;
  }
  const kinds = [...new Set(changed.map((i) => i.action))];
  const legend = (['create', 'update', 'delete', 'replace'] as const)
    .filter((k) => kinds.includes(k))
    .map((k) => LEGEND[k]);
  if (legend.length > 0) {
    lines.push(
      'Terraform used the selected providers to generate the following execution',
      'plan. Resource actions are indicated with the following symbols:',
      ...legend,
      '',
    );
  }
  lines.push('Terraform will perform the following actions:', '');
  for (const i of changed) {
    lines.push(...headline(i, configured.has(i.address)));
    lines.push(
      `  ${SYMBOLS[i.action]} resource "${i.type}" "${i.name}" {`.replace(/^ {2}-\/\+/, '-/+'),
    );
    lines.push(...attributeLines(i), '    }', '');
  }
  const prefix = counts.imports > 0 ? `${counts.imports} to import, ` : '';
  lines.push(
    `Plan: ${prefix}${counts.additions} to add, ${counts.changes} to change, ${counts.destructions} to destroy.`,
  );
  if (outputs.length > 0) lines.push('', 'Changes to Outputs:', ...outputLines(outputs));
  lines.push(...warningLines(plan.warnings));
  return lines;
}

function outputLines(outputs: readonly PlannedOutput[]): string[] {
  const width = Math.max(0, ...outputs.map((o) => o.name.length));
  return outputs.map((o) => {
    const name = o.name.padEnd(width);
    const after = o.sensitive ? '(sensitive value)' : show(o.after);
    const before = o.sensitive ? '(sensitive value)' : show(o.before);
    const [action] = outputActions(o);
    if (action === 'create') return `  + ${name} = ${after}`;
    if (action === 'delete') return `  - ${name} = ${before} -> null`;
    return `  ~ ${name} = ${before} -> ${after}`;
  });
}
