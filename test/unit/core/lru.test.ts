import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Lru } from '../../../src/core/lru.js';

describe('Lru', () => {
  it('drops the least recently used entry when full; a read refreshes an entry', () => {
    const lru = new Lru<string, number>(2);
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.get('a')).toBe(1);
    lru.set('c', 3);
    expect([lru.has('a'), lru.has('b'), lru.has('c')]).toEqual([true, false, true]);
    expect(lru.getOrSet('d', () => 4)).toBe(4);
    expect(lru.has('a')).toBe(false);
    expect(lru.delete('c')).toBe(true);
    expect(lru.size).toBe(1);
    lru.clear();
    expect(lru.size).toBe(0);
  });

  it('refuses a capacity below one', () => {
    expect(() => new Lru(0)).toThrow(/capacity/);
  });

  it('agrees with a list-based model for any sequence of operations', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), key: fc.nat(8), value: fc.integer() }),
      fc.record({ kind: fc.constant('get' as const), key: fc.nat(8) }),
      fc.record({ kind: fc.constant('delete' as const), key: fc.nat(8) }),
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op), (capacity, ops) => {
        const lru = new Lru<number, number>(capacity);
        // the model: most recently used last
        let model: [number, number][] = [];
        for (const o of ops) {
          const found = model.find(([k]) => k === o.key);
          if (o.kind === 'get') {
            expect(lru.get(o.key)).toBe(found?.[1]);
            if (found) model = [...model.filter(([k]) => k !== o.key), found];
          } else if (o.kind === 'delete') {
            expect(lru.delete(o.key)).toBe(found !== undefined);
            model = model.filter(([k]) => k !== o.key);
          } else {
            lru.set(o.key, o.value);
            model = [...model.filter(([k]) => k !== o.key), [o.key, o.value]];
            if (model.length > capacity) model = model.slice(1);
          }
          expect(lru.size).toBe(model.length);
        }
        for (const [k, v] of model) expect(lru.has(k) && lru.get(k) === v).toBe(true);
      }),
    );
  });
});
