/**
 * Parser for the subset of Go `text/template` that username templates use: text, `{{ }}` actions
 * with `{{-`/`-}}` trim markers, comments, `if`/`else`/`else if`/`end`, pipelines joined by `|`,
 * parenthesised pipelines, string/number/bool literals, `.` and `.Field`, and function calls.
 */

/** A template that failed to parse or to execute; the message reads like Go's `template:` errors. */
export class TemplateError extends Error {
  constructor(
    readonly kind: 'parse' | 'exec',
    message: string,
  ) {
    super(message);
    this.name = 'TemplateError';
  }
}

export type Operand =
  | { kind: 'string'; value: string }
  | { kind: 'number'; value: number }
  | { kind: 'bool'; value: boolean }
  | { kind: 'dot' }
  | { kind: 'field'; name: string }
  | { kind: 'func'; name: string }
  | { kind: 'pipeline'; pipeline: Pipeline };

/** One command of a pipeline: its first operand is the function (or the value), the rest arguments. */
export interface Command {
  operands: readonly Operand[];
  line: number;
}

export type Pipeline = readonly Command[];

export type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipeline: Pipeline; line: number }
  | { kind: 'if'; cond: Pipeline; then: readonly Node[]; otherwise: readonly Node[]; line: number };

/** Templates this long or longer are refused, as the reference does. */
export const MAX_TEMPLATE_LENGTH = 100_000;

type Token =
  | { t: 'lparen' | 'rparen' | 'pipe' }
  | { t: 'string'; value: string }
  | { t: 'number'; value: number }
  | { t: 'ident'; value: string }
  | { t: 'field'; value: string }
  | { t: 'dot' };

interface Action {
  tokens: Token[];
  line: number;
}

type Piece = { kind: 'text'; text: string } | { kind: 'action'; action: Action };

const isSpace = (c: string | undefined): boolean =>
  c === ' ' || c === '\t' || c === '\r' || c === '\n';

/** Splits the source into text and action pieces, applying trim markers. */
function scan(src: string, name: string): Piece[] {
  const pieces: Piece[] = [];
  let i = 0;
  let trimNext = false;
  const lineAt = (pos: number) => src.slice(0, pos).split('\n').length;
  const fail = (pos: number, msg: string): never => {
    throw new TemplateError('parse', `template: ${name}:${lineAt(pos)}: ${msg}`);
  };
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = open < 0 ? src.slice(i) : src.slice(i, open);
    if (trimNext) text = text.replace(/^[ \t\r\n]+/, '');
    trimNext = false;
    if (open < 0) {
      if (text) pieces.push({ kind: 'text', text });
      break;
    }
    let p = open + 2;
    if (src[p] === '-' && isSpace(src[p + 1])) {
      text = text.replace(/[ \t\r\n]+$/, '');
      p += 2;
    }
    if (text) pieces.push({ kind: 'text', text });
    const line = lineAt(open);
    // A comment must be the whole action: {{/* ... */}} (with optional trim markers).
    const afterSpace = src.slice(p).match(/^[ \t\r\n]*/)?.[0].length ?? 0;
    if (src.startsWith('/*', p + afterSpace)) {
      const endComment = src.indexOf('*/', p + afterSpace + 2);
      if (endComment < 0) fail(open, 'unclosed comment');
      let q = endComment + 2;
      const trimmed = src.slice(q).match(/^[ \t\r\n]+-}}/);
      if (trimmed) {
        trimNext = true;
        q += trimmed[0].length;
      } else if (src.startsWith('}}', q)) {
        q += 2;
      } else {
        fail(open, 'comment ends before closing delimiter');
      }
      i = q;
      continue;
    }
    const tokens: Token[] = [];
    for (;;) {
      if (p >= src.length) fail(open, 'unclosed action');
      const c = src[p] as string;
      if (isSpace(c)) {
        if (src[p + 1] === '-' && src.startsWith('}}', p + 2)) {
          trimNext = true;
          p += 4;
          break;
        }
        p += 1;
        continue;
      }
      if (src.startsWith('}}', p)) {
        p += 2;
        break;
      }
      if (c === '(' || c === ')' || c === '|') {
        tokens.push({ t: c === '(' ? 'lparen' : c === ')' ? 'rparen' : 'pipe' });
        p += 1;
      } else if (c === '"') {
        let q = p + 1;
        let value = '';
        for (;;) {
          const d = src[q];
          if (d === undefined || d === '\n') fail(open, 'unterminated quoted string');
          if (d === '"') break;
          if (d === '\\') {
            const e = src[q + 1];
            const esc: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };
            if (e === undefined || esc[e] === undefined) fail(open, `invalid escape \\${e ?? ''}`);
            value += esc[e as string];
            q += 2;
          } else {
            value += d;
            q += 1;
          }
        }
        tokens.push({ t: 'string', value });
        p = q + 1;
      } else if (c === '`') {
        const end = src.indexOf('`', p + 1);
        if (end < 0) fail(open, 'unterminated raw quoted string');
        tokens.push({ t: 'string', value: src.slice(p + 1, end) });
        p = end + 1;
      } else if (/[-+0-9]/.test(c)) {
        const m = src.slice(p).match(/^[-+]?(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]+)?)/);
        if (!m) fail(open, `bad number syntax: ${src.slice(p, p + 10)}`);
        const text = (m as RegExpMatchArray)[0];
        if (/[A-Za-z_]/.test(src[p + text.length] ?? '')) fail(open, `bad number syntax: ${text}`);
        tokens.push({ t: 'number', value: Number(text) });
        p += text.length;
      } else if (c === '.') {
        const m = src.slice(p + 1).match(/^[A-Za-z_][A-Za-z0-9_]*/);
        if (m) {
          tokens.push({ t: 'field', value: m[0] });
          p += 1 + m[0].length;
        } else {
          tokens.push({ t: 'dot' });
          p += 1;
        }
      } else if (/[A-Za-z_]/.test(c)) {
        const m = src.slice(p).match(/^[A-Za-z_][A-Za-z0-9_]*/) as RegExpMatchArray;
        tokens.push({ t: 'ident', value: m[0] });
        p += m[0].length;
      } else if (c === '$') {
        fail(open, 'variables are not supported in username templates');
      } else {
        fail(open, `unexpected ${JSON.stringify(c)} in command`);
      }
    }
    pieces.push({ kind: 'action', action: { tokens, line } });
    i = p;
  }
  return pieces;
}

/** Parses the tokens of one action into a pipeline. */
function parsePipeline(tokens: Token[], line: number, name: string): Pipeline {
  const fail = (msg: string): never => {
    throw new TemplateError('parse', `template: ${name}:${line}: ${msg}`);
  };
  let pos = 0;
  const pipeline = (closer: 'rparen' | 'end'): Command[] => {
    const commands: Command[] = [];
    let operands: Operand[] = [];
    const finish = () => {
      if (operands.length === 0) fail('missing command in pipeline');
      commands.push({ operands, line });
      operands = [];
    };
    for (;;) {
      const tok = tokens[pos];
      if (tok === undefined) {
        if (closer === 'rparen') fail('unclosed left paren');
        finish();
        return commands;
      }
      pos += 1;
      switch (tok.t) {
        case 'rparen':
          if (closer !== 'rparen') fail('unexpected right paren');
          finish();
          return commands;
        case 'pipe':
          finish();
          break;
        case 'lparen':
          operands.push({ kind: 'pipeline', pipeline: pipeline('rparen') });
          break;
        case 'string':
          operands.push({ kind: 'string', value: tok.value });
          break;
        case 'number':
          operands.push({ kind: 'number', value: tok.value });
          break;
        case 'field':
          operands.push({ kind: 'field', name: tok.value });
          break;
        case 'dot':
          operands.push({ kind: 'dot' });
          break;
        case 'ident':
          if (tok.value === 'true' || tok.value === 'false') {
            operands.push({ kind: 'bool', value: tok.value === 'true' });
          } else if (tok.value === 'nil') {
            fail('nil is not a command');
          } else {
            operands.push({ kind: 'func', name: tok.value });
          }
          break;
        default: {
          const _never: never = tok;
          return _never;
        }
      }
    }
  };
  if (tokens.length === 0) fail('missing value for command');
  return pipeline('end');
}

const KEYWORDS = new Set([
  'if',
  'else',
  'end',
  'range',
  'with',
  'define',
  'template',
  'block',
  'break',
  'continue',
]);

/** Parses a template source into its node tree, or throws a parse `TemplateError`. */
export function parse(src: string, name = 'template'): readonly Node[] {
  if (src.length >= MAX_TEMPLATE_LENGTH) {
    throw new TemplateError(
      'parse',
      `template: ${name}: template is too long (${src.length} characters; the limit is ${MAX_TEMPLATE_LENGTH - 1})`,
    );
  }
  const pieces = scan(src, name);
  let pos = 0;
  type Stop = { word: 'else' | 'end'; elseIf?: Pipeline; line: number };
  // Parses nodes until `{{else}}`, `{{else if …}}` or `{{end}}` (inside an if) or the end of input.
  const list = (inIf: boolean): { nodes: Node[]; stop: Stop | null } => {
    const nodes: Node[] = [];
    while (pos < pieces.length) {
      const piece = pieces[pos] as Piece;
      pos += 1;
      if (piece.kind === 'text') {
        nodes.push(piece);
        continue;
      }
      const { tokens, line } = piece.action;
      const fail = (msg: string): never => {
        throw new TemplateError('parse', `template: ${name}:${line}: ${msg}`);
      };
      const head = tokens[0];
      const word = head?.t === 'ident' && KEYWORDS.has(head.value) ? head.value : null;
      if (word === null) {
        nodes.push({ kind: 'action', pipeline: parsePipeline(tokens, line, name), line });
        continue;
      }
      switch (word) {
        case 'if': {
          const cond = parsePipeline(tokens.slice(1), line, name);
          nodes.push(parseIf(cond, line));
          break;
        }
        case 'else': {
          if (!inIf) fail('unexpected {{else}}');
          const next = tokens[1];
          if (next?.t === 'ident' && next.value === 'if') {
            return {
              nodes,
              stop: { word: 'else', elseIf: parsePipeline(tokens.slice(2), line, name), line },
            };
          }
          if (tokens.length > 1) fail('unexpected token after else');
          return { nodes, stop: { word: 'else', line } };
        }
        case 'end':
          if (!inIf) fail('unexpected {{end}}');
          if (tokens.length > 1) fail('unexpected token after end');
          return { nodes, stop: { word: 'end', line } };
        default:
          fail(`{{${word}}} is not supported in username templates`);
      }
    }
    return { nodes, stop: null };
  };
  const parseIf = (cond: Pipeline, line: number): Node => {
    const then = list(true);
    if (then.stop === null) {
      throw new TemplateError(
        'parse',
        `template: ${name}:${line}: unexpected EOF (missing {{end}} for if)`,
      );
    }
    if (then.stop.word === 'end')
      return { kind: 'if', cond, then: then.nodes, otherwise: [], line };
    if (then.stop.elseIf) {
      // `else if` nests an if that consumes the shared {{end}}.
      const inner = parseIf(then.stop.elseIf, then.stop.line);
      return { kind: 'if', cond, then: then.nodes, otherwise: [inner], line };
    }
    const otherwise = list(true);
    if (otherwise.stop === null) {
      throw new TemplateError(
        'parse',
        `template: ${name}:${line}: unexpected EOF (missing {{end}} for if)`,
      );
    }
    if (otherwise.stop.word === 'else') {
      throw new TemplateError(
        'parse',
        `template: ${name}:${otherwise.stop.line}: expected end; found {{else}}`,
      );
    }
    return { kind: 'if', cond, then: then.nodes, otherwise: otherwise.nodes, line };
  };
  const top = list(false);
  return top.nodes;
}
