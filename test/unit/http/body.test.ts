import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, jsonDepth, parseBody } from '../../../src/http/body.js';
import { KeelError } from '../../../src/core/errors.js';

const nested = (depth: number, open = '[', close = ']') =>
  Buffer.from(`${open.repeat(depth)}${close.repeat(depth)}`);

/** The depth by an independent oracle: the parsed value walked. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object')
    return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

const refusal = (fn: () => unknown): KeelError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof KeelError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
};

describe('request body nesting', () => {
  it('measures the depth of any JSON value as its parse does', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), (value) => {
        const text = JSON.stringify(value);
        expect(jsonDepth(Buffer.from(text))).toBe(depthOf(JSON.parse(text)));
      }),
    );
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonDepth(Buffer.from('{"a":"[[[{{{\\"]]]"}'))).toBe(1);
    expect(jsonDepth(Buffer.from('["\\\\",["x"]]'))).toBe(2);
  });

  it.each([
    ['jsonapi', 'application/vnd.api+json'],
    ['vault', 'application/json'],
  ] as const)(
    '%s: accepts the limit, refuses one more with 400 and a clear message',
    (dialect, type) => {
      expect(parseBody(nested(MAX_JSON_DEPTH), type, dialect)).toBeDefined();
      for (const [open, close] of [
        ['[', ']'],
        ['{"a":', '}'],
      ]) {
        const err = refusal(() =>
          parseBody(nested(MAX_JSON_DEPTH + 1, open, close), type, dialect),
        );
        expect(err.details.status).toBe(400);
        expect(err.message).toBe(`request body nests deeper than ${MAX_JSON_DEPTH} levels`);
      }
    },
  );

  it('refuses a body nested 100,000 deep without overflowing the stack', () => {
    const err = refusal(() => parseBody(nested(100_000), 'application/json', 'vault'));
    expect(err.details.status).toBe(400);
  });
});
