import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { builtinDriver } from '../../../src/runs/executor/builtin/index.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';
import type { RunFlags, StateV4 } from '../../../src/runs/executor/types.js';
import { tarball } from '../../support/configuration.js';

/** A resource block: a type, a name, an optional count and literal attributes. */
interface Block {
  type: string;
  name: string;
  count: number | null;
  attrs: Record<string, string | number | boolean>;
}

/**
 * Whether a block is counted follows its name: terraform moves `x.a` to `x.a[0]` when count is
 * added, a refactoring the builtin engine refuses.
 */
const blockArb: fc.Arbitrary<Block> = fc
  .record({
    type: fc.constantFrom('aws_instance', 'aws_s3_bucket', 'null_resource'),
    name: fc.constantFrom('a', 'b', 'c', 'd'),
    count: fc.integer({ min: 0, max: 3 }),
    attrs: fc.dictionary(
      fc.constantFrom('size', 'tier', 'flag'),
      fc.oneof(fc.constantFrom('x', 'y'), fc.integer({ min: 0, max: 2 }), fc.boolean()),
      { maxKeys: 2 },
    ),
  })
  .map((b) => ({ ...b, count: b.name === 'c' || b.name === 'd' ? b.count : null }));

/** Blocks with unique addresses, rendered as HCL. */
const configArb = fc.uniqueArray(blockArb, {
  selector: (b) => `${b.type}.${b.name}`,
  maxLength: 4,
});

function hcl(blocks: Block[]): string {
  return blocks
    .map((b) => {
      const lines = Object.entries(b.attrs).map(([k, v]) => `  ${k} = ${JSON.stringify(v)}`);
      if (b.count !== null) lines.unshift(`  count = ${b.count}`);
      return `resource "${b.type}" "${b.name}" {\n${lines.join('\n')}\n}\n`;
    })
    .join('\n');
}

const addresses = (blocks: Block[]) =>
  blocks
    .flatMap((b) =>
      b.count === null
        ? [`${b.type}.${b.name}`]
        : Array.from({ length: b.count }, (_, i) => `${b.type}.${b.name}[${i}]`),
    )
    .sort();

const stateAddresses = (state: StateV4) =>
  state.resources
    .flatMap((r) =>
      r.instances.map(
        (i) => `${r.type}.${r.name}${i.index_key === undefined ? '' : `[${String(i.index_key)}]`}`,
      ),
    )
    .sort();

async function run(blocks: Block[], state: StateV4 | null, flags: Partial<RunFlags> = {}) {
  let n = 0;
  const driver = builtinDriver({ newId: () => `id-${++n}`, newLineage: () => 'lineage' });
  const request = {
    configuration: tarball({ 'main.tf': hcl(blocks) || '# empty\n' }),
    workspaceVariables: [],
    runVariables: [],
    state,
    flags: { ...defaultFlags, ...flags },
    log: () => undefined,
  };
  const plan = await driver.plan(request).result;
  if (plan.status !== 'finished') throw new Error(`plan ${plan.status}`);
  const apply = await driver.apply({ ...request, artifact: plan.artifact }).result;
  if (apply.status !== 'finished') throw new Error(`apply ${apply.status}`);
  return { plan, state: apply.state };
}

describe('builtin driver properties', () => {
  it('applying any sequence of configurations converges: the state holds exactly the configured instances and a second plan has no changes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(configArb, { minLength: 1, maxLength: 3 }), async (configs) => {
        let state: StateV4 | null = null;
        for (const [i, blocks] of configs.entries()) {
          const applied = await run(blocks, state);
          expect(applied.state.serial).toBe(i + 1);
          expect(applied.state.lineage).toBe('lineage');
          expect(stateAddresses(applied.state)).toEqual(addresses(blocks));
          state = applied.state;
          const again = await run(blocks, state);
          expect(again.plan.status === 'finished' && again.plan.counts.hasChanges).toBe(false);
        }
        const last = configs.at(-1) ?? [];
        const destroyed = await run(last, state, { isDestroy: true });
        expect(destroyed.state.resources).toEqual([]);
      }),
      { numRuns: 25 },
    );
  });
});
