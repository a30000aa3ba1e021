import type { ResourceBlock } from './config.js';
import { ConfigurationError } from './config.js';

/**
 * Orders resource blocks so that every block comes after the blocks it refers to (Kahn's
 * algorithm, ties broken by declaration order so plans are deterministic).
 */
export function dependencyOrder(blocks: readonly ResourceBlock[]): ResourceBlock[] {
  const byAddress = new Map(blocks.map((b) => [b.address, b]));
  for (const block of blocks) {
    for (const dep of block.dependsOn) {
      if (!byAddress.has(dep)) {
        throw new ConfigurationError(
          'Reference to undeclared resource',
          `${block.address} refers to ${dep}, which is not declared in the root module (${block.file})`,
        );
      }
    }
  }
  const ordered: ResourceBlock[] = [];
  const placed = new Set<string>();
  while (ordered.length < blocks.length) {
    const next = blocks.find(
      (b) => !placed.has(b.address) && b.dependsOn.every((d) => placed.has(d) || d === b.address),
    );
    if (!next) {
      const cycle = blocks.filter((b) => !placed.has(b.address)).map((b) => b.address);
      throw new ConfigurationError('Cycle', cycle.join(', '));
    }
    if (next.dependsOn.includes(next.address)) {
      throw new ConfigurationError(
        'Self-referential block',
        `${next.address} refers to itself (${next.file})`,
      );
    }
    ordered.push(next);
    placed.add(next.address);
  }
  return ordered;
}

/** The block address of an instance address: `aws_instance.web[0]` → `aws_instance.web`. */
export const blockAddress = (instance: string): string => instance.replace(/\[[^\]]*\]$/, '');

/** Whether a `-target`/`-replace` address names this instance (a block address names all of them). */
export const addressMatches = (target: string, instance: string): boolean =>
  target === instance || target === blockAddress(instance);

/**
 * A predicate for instances a targeted plan may touch: the targets themselves and, as terraform
 * does, every block they depend on (directly or transitively).
 */
export function targeting(
  blocks: readonly ResourceBlock[],
  targets: readonly string[],
): (instance: string) => boolean {
  const byAddress = new Map(blocks.map((b) => [b.address, b]));
  const dependencies = new Set<string>();
  const visit = (address: string): void => {
    for (const dep of byAddress.get(address)?.dependsOn ?? []) {
      if (dependencies.has(dep)) continue;
      dependencies.add(dep);
      visit(dep);
    }
  };
  for (const target of targets) visit(blockAddress(target));
  return (instance) =>
    targets.some((t) => addressMatches(t, instance)) || dependencies.has(blockAddress(instance));
}
