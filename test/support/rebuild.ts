import { expect } from 'vitest';
import type { EventPages, Projections } from '../../src/core/projections.js';

/**
 * Every read model rebuilt alone from the log (as a version bump does at start) leaves every
 * table as the full rebuild does: no projection depends on another's tables or schedule rows.
 */
export function expectEachProjectionRebuildsAlone(projections: Projections, pages: EventPages) {
  projections.rebuildAll(pages);
  const whole = projections.dump();
  for (const p of projections.list) {
    projections.rebuildOnly([p.name], pages);
    expect(projections.dump(), `${p.name} rebuilt alone`).toEqual(whole);
  }
}
