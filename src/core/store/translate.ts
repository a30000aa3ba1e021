/**
 * Keel's SQL is written once, in SQLite's dialect; the PostgreSQL adapter translates each
 * statement when it is prepared (ADR 0081). This is a pure function of the text and the primary
 * keys known for the tables (`INSERT OR REPLACE` needs them). What it cannot translate it refuses
 * with a clear error rather than guessing.
 */

/** How the statement's parameters are bound: by position, or by the names in `$n` order. */
export type Params = { kind: 'positional'; count: number } | { kind: 'named'; names: string[] };

/** A transaction statement: the adapter runs these itself (BEGIN takes the log's lock). */
export type Control =
  | { kind: 'begin' }
  | { kind: 'commit' }
  | { kind: 'rollback' }
  | { kind: 'savepoint'; name: string }
  | { kind: 'release'; name: string }
  | { kind: 'rollback-to'; name: string };

export interface Translated {
  text: string;
  params: Params;
  control: Control | null;
  /** A CREATE TABLE: the table and its primary key columns (for `INSERT OR REPLACE`). */
  creates: { table: string; key: string[] } | null;
}

/** Primary key columns of a table, when known. */
export type KeyLookup = (table: string) => readonly string[] | undefined;

/** The collation `COLLATE NOCASE` becomes (created by the adapter; ICU, case-insensitive). */
export const NOCASE_COLLATION = 'keel_nocase';

type Token = { kind: 'string' | 'ident' | 'word' | 'param' | 'space' | 'other'; text: string };

const TOKEN =
  /'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|--[^\n]*|\/\*[\s\S]*?\*\/|\?\d*|[@:$][A-Za-z_]\w*|[A-Za-z_][\w$]*|\s+|[\s\S]/y;

export function tokenize(sql: string): Token[] {
  const out: Token[] = [];
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(sql); m !== null; m = TOKEN.exec(sql)) {
    const text = m[0];
    const c = text[0]!;
    const kind: Token['kind'] =
      c === "'"
        ? 'string'
        : c === '"' || c === '`'
          ? 'ident'
          : c === '?' || (text.length > 1 && (c === '@' || c === ':' || c === '$'))
            ? 'param'
            : /\s/.test(c) || text.startsWith('--') || text.startsWith('/*')
              ? 'space'
              : /[A-Za-z_]/.test(c)
                ? 'word'
                : 'other';
    out.push({ kind, text });
  }
  return out;
}

/** The statements of a script, split at semicolons outside literals (empty ones dropped). */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const token of tokenize(sql)) {
    if (token.kind === 'other' && token.text === ';') {
      if (current.trim() !== '') out.push(current.trim());
      current = '';
    } else current += token.text;
  }
  if (current.trim() !== '') out.push(current.trim());
  return out;
}

const upper = (t: Token | undefined): string => (t?.kind === 'word' ? t.text.toUpperCase() : '');
const unquote = (t: Token): string =>
  t.kind === 'ident' ? t.text.slice(1, -1).replace(/""/g, '"') : t.text;

const TYPES: Readonly<Record<string, string>> = {
  INTEGER: 'BIGINT',
  REAL: 'DOUBLE PRECISION',
  BLOB: 'BYTEA',
};

/** Words PostgreSQL has no counterpart for: the statement is rewritten in Keel instead. */
const REFUSED = new Set(['GLOB', 'PRAGMA', 'REGEXP', 'VACUUM', 'ATTACH']);

/** A transaction statement (`words` upper-cased, `texts` as written), or null. */
function control(words: string[], texts: string[]): Control | null {
  const [a, b, c] = words;
  const name = texts.at(-1)!;
  if (a === 'BEGIN' && words.length <= 3) return { kind: 'begin' };
  if ((a === 'COMMIT' || a === 'END') && words.length <= 2) return { kind: 'commit' };
  if (a === 'ROLLBACK' && b === 'TO') return { kind: 'rollback-to', name };
  if (a === 'ROLLBACK' && words.length <= 2) return { kind: 'rollback' };
  if (a === 'SAVEPOINT' && b !== undefined && c === undefined) return { kind: 'savepoint', name };
  if (a === 'RELEASE') return { kind: 'release', name };
  return null;
}

/** Translate one SQLite statement to PostgreSQL. */
export function translate(sql: string, keys: KeyLookup): Translated {
  const tokens = tokenize(sql.trim().replace(/;\s*$/, ''));
  const solid = tokens.filter((t) => t.kind !== 'space');
  const words = solid.map((t) => (t.kind === 'word' ? t.text.toUpperCase() : t.text));
  const ctl = control(
    words,
    solid.map((t) => t.text),
  );
  if (ctl !== null) {
    return { text: sql, params: { kind: 'positional', count: 0 }, control: ctl, creates: null };
  }
  for (const w of words) {
    if (REFUSED.has(w)) throw new Error(`SQL with ${w} has no PostgreSQL translation: ${sql}`);
  }
  const creates = createTable(solid, words);
  let suffix = '';
  // INSERT OR IGNORE / OR REPLACE: the clause moves to the end as ON CONFLICT.
  if (words[0] === 'INSERT' && words[1] === 'OR') {
    const how = words[2];
    const orAt = tokens.indexOf(solid[1]!);
    const howAt = tokens.indexOf(solid[2]!);
    tokens.splice(orAt, howAt - orAt + (tokens[howAt + 1]?.kind === 'space' ? 2 : 1));
    if (how === 'IGNORE') suffix = ' ON CONFLICT DO NOTHING';
    else if (how === 'REPLACE') suffix = replaceClause(solid, keys, sql);
    else throw new Error(`INSERT OR ${how} has no PostgreSQL translation: ${sql}`);
  }
  let text = '';
  const names: string[] = [];
  let positional = 0;
  /** Tokens already written elsewhere (a column's COLLATE clause, moved after its type). */
  const skip = new Set<number>();
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (skip.has(i)) continue;
    if (t.kind === 'param') {
      let n: number;
      if (t.text === '?') n = ++positional;
      else if (t.text.startsWith('?')) n = Number(t.text.slice(1));
      else {
        const name = t.text.slice(1);
        const at = names.indexOf(name);
        n = at >= 0 ? at + 1 : names.push(name);
      }
      // `? IS NULL`: PostgreSQL cannot tell such a parameter's type; it is text.
      const next = tokens.slice(i + 1).filter((x) => x.kind !== 'space');
      text += upper(next[0]) === 'IS' && upper(next[1]) !== '' ? `$${n}::text` : `$${n}`;
      continue;
    }
    if (t.kind !== 'word') {
      text += t.text;
      continue;
    }
    const w = t.text.toUpperCase();
    const prev = lastSolid(tokens, i);
    if (w in TYPES) text += TYPES[w];
    else if (w === 'NOCASE' && upper(prev) === 'COLLATE') text += NOCASE_COLLATION;
    else if (w === 'TEXT' && creates !== null) {
      // PostgreSQL wants a column's collation right after its type, SQLite takes it anywhere.
      const at = columnCollate(tokens, i);
      if (at < 0) text += t.text;
      else {
        const name = nextSolid(tokens, at)!;
        if (upper(name) !== 'NOCASE') throw new Error(`only COLLATE NOCASE is translated: ${sql}`);
        text += `${t.text} COLLATE ${NOCASE_COLLATION}`;
        const end = tokens.indexOf(name, at);
        for (let j = tokens[at - 1]?.kind === 'space' ? at - 1 : at; j <= end; j++) skip.add(j);
      }
    } else if (w === 'INSTR' && nextSolid(tokens, i)?.text === '(') text += 'strpos';
    else text += t.text;
  }
  if (positional > 0 && names.length > 0) {
    throw new Error(`SQL mixes positional and named parameters: ${sql}`);
  }
  const params: Params =
    names.length > 0 ? { kind: 'named', names } : { kind: 'positional', count: positional };
  return { text: text + suffix, params, control: null, creates };
}

function lastSolid(tokens: Token[], i: number): Token | undefined {
  for (let j = i - 1; j >= 0; j--) if (tokens[j]!.kind !== 'space') return tokens[j];
  return undefined;
}

function nextSolid(tokens: Token[], i: number): Token | undefined {
  for (let j = i + 1; j < tokens.length; j++) if (tokens[j]!.kind !== 'space') return tokens[j];
  return undefined;
}

/** Where the column definition holding token `i` names its collation (`COLLATE`), or -1. */
function columnCollate(tokens: Token[], i: number): number {
  let depth = 0;
  for (let j = i + 1; j < tokens.length; j++) {
    const t = tokens[j]!;
    if (t.text === '(') depth++;
    else if (t.text === ')') {
      if (depth === 0) return -1;
      depth--;
    } else if (t.text === ',' && depth === 0) return -1;
    else if (upper(t) === 'COLLATE') return j;
  }
  return -1;
}

/** `CREATE TABLE [IF NOT EXISTS] name (...)`: the table and its primary key columns. */
function createTable(solid: Token[], words: string[]): Translated['creates'] {
  if (words[0] !== 'CREATE' || !words.slice(1, 3).includes('TABLE')) return null;
  let at = words.indexOf('TABLE') + 1;
  if (words[at] === 'IF') at += 3;
  const table = unquote(solid[at]!).toLowerCase();
  if (words[at + 1] !== '(') return { table, key: [] };
  // The body's parts at depth 1, split at commas.
  const parts: Token[][] = [[]];
  let depth = 0;
  for (const t of solid.slice(at + 2)) {
    if (t.text === '(') depth++;
    if (t.text === ')') {
      if (depth === 0) break;
      depth--;
    }
    if (t.text === ',' && depth === 0) parts.push([]);
    else parts.at(-1)!.push(t);
  }
  for (const part of parts) {
    const ws = part.map((t) => upper(t));
    const pk = ws.findIndex((w, j) => w === 'PRIMARY' && ws[j + 1] === 'KEY');
    if (pk < 0) continue;
    if (pk === 0) {
      const inside = part.slice(
        3,
        part.findIndex((t) => t.text === ')'),
      );
      const key = inside.filter((t) => t.kind === 'word' || t.kind === 'ident').map(unquote);
      return { table, key: key.filter((k) => !['ASC', 'DESC'].includes(k.toUpperCase())) };
    }
    return { table, key: [unquote(part[0]!)] };
  }
  return { table, key: [] };
}

/** `ON CONFLICT (<primary key>) DO UPDATE SET` every other listed column to the new row's. */
function replaceClause(solid: Token[], keys: KeyLookup, sql: string): string {
  const into = solid.findIndex((t) => upper(t) === 'INTO');
  const table = unquote(solid[into + 1]!).toLowerCase();
  if (solid[into + 2]?.text !== '(') {
    throw new Error(`INSERT OR REPLACE needs a column list to be translated: ${sql}`);
  }
  const columns: string[] = [];
  for (let j = into + 3; j < solid.length && solid[j]!.text !== ')'; j++) {
    if (solid[j]!.text !== ',') columns.push(unquote(solid[j]!));
  }
  const key = keys(table);
  if (key === undefined || key.length === 0) {
    throw new Error(`no primary key is known for table ${table}: ${sql}`);
  }
  const lower = key.map((k) => k.toLowerCase());
  const rest = columns.filter((c) => !lower.includes(c.toLowerCase()));
  const target = ` ON CONFLICT (${key.join(', ')}) DO`;
  if (rest.length === 0) return `${target} NOTHING`;
  return `${target} UPDATE SET ${rest.map((c) => `${c} = EXCLUDED.${c}`).join(', ')}`;
}
