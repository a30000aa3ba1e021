/**
 * Stream ids. Every kind of stream names its streams by one template of literal text and fields,
 * declared once where its events are (`streamName\`pki/${'mount'}/cert/${'serial'}\``), and both
 * builds (`streams.cert(mount, serial)`) and parses (`streams.cert.parse(id)`) its ids through it:
 * nothing else splits a stream id by hand.
 *
 * Parsing is unambiguous by one rule: a field never contains the first character of the text
 * that follows it (building refuses such a value), so it ends at that character's first
 * occurrence; a field at the very end of the id is the rest, whatever it holds. The templates
 * encode the ids already in logs, so existing data directories read as before.
 */

/** Where a kind of stream lives in the log: a prefix, and a pattern when the prefix is shared. */
export interface StreamLocation {
  readonly prefix: string;
  readonly pattern?: RegExp;
}

/**
 * One kind of stream id: called with its fields it builds an id; `parse` reads the fields back.
 */
export type StreamName<T extends readonly string[]> = ((
  ...values: { [K in keyof T]: string }
) => string) &
  StreamLocation & {
    /** Matches the ids of this kind, and no other. */
    readonly pattern: RegExp;
    /** The fields of an id of this kind, or null for any other stream. */
    parse(stream: string): { [K in T[number]]: string } | null;
  };

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Declares a kind of stream id by its template; see the module's comment for the rule. */
export function streamName<const T extends readonly string[]>(
  literals: TemplateStringsArray,
  ...fields: T
): StreamName<T> {
  const text = [...literals];
  if (fields.length === 0) throw new Error('a stream name needs at least one field');
  // what ends each field: the first character of the text after it ('' for a field at the end)
  const ends = fields.map((field, i) => {
    const after = text[i + 1] ?? '';
    if (i < fields.length - 1 && after === '')
      throw new Error(`stream name field ${field} runs into the next one`);
    return after[0] ?? '';
  });
  const fieldPattern = (end: string) => (end === '' ? '([\\s\\S]*)' : `([^${escape(end)}]*)`);
  const pattern = new RegExp(
    `^${text.map((literal, i) => escape(literal) + (i < fields.length ? fieldPattern(ends[i]!) : '')).join('')}$`,
  );
  const build = (...values: { [K in keyof T]: string }): string =>
    text
      .map((literal, i) => {
        if (i === fields.length) return literal;
        const value = values[i] as string;
        const end = ends[i]!;
        if (end !== '' && value.includes(end))
          throw new Error(
            `stream name field ${fields[i]} cannot hold ${JSON.stringify(end)}: ${JSON.stringify(value)}`,
          );
        return literal + value;
      })
      .join('');
  return Object.assign(build, {
    prefix: text[0] ?? '',
    pattern,
    parse(stream: string) {
      const match = pattern.exec(stream);
      if (match === null) return null;
      return Object.fromEntries(fields.map((f, i) => [f, match[i + 1] ?? ''])) as {
        [K in T[number]]: string;
      };
    },
  });
}

/**
 * The streams named by a resource's own id (`Ids.id(prefix)`: `run-<base62>`), as runs,
 * workspaces and configuration versions are: the id is the stream.
 */
export function idStreams(prefix: string): StreamLocation {
  return { prefix: `${prefix}-`, pattern: new RegExp(`^${escape(prefix)}-[0-9A-Za-z]+$`) };
}
