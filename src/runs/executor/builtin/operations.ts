import type { Json } from '../types.js';
import { EvaluationError, UNKNOWN, jsonEqual, parseReference } from './expressions.js';
import type { Reference, Value } from './expressions.js';

/**
 * The expressions the builtin engine evaluates inside `${…}` beyond a bare reference: literals,
 * parentheses, `!` and unary `-`, the integer arithmetic `+ - *`, comparisons, `&&` and `||`,
 * conditionals, and calls to a few functions. Each is limited to the values on which terraform's
 * result is known to be the same (ASCII strings, whole numbers, same-typed branches); anything
 * else is refused, naming it, rather than evaluated differently.
 */
export type Expr =
  | { kind: 'literal'; value: Json }
  | { kind: 'reference'; reference: Reference }
  | { kind: 'unary'; op: '!' | '-'; operand: Expr }
  | { kind: 'binary'; op: BinaryOp; left: Expr; right: Expr }
  | { kind: 'conditional'; condition: Expr; then: Expr; otherwise: Expr }
  | { kind: 'call'; name: string; args: Expr[] }
  | { kind: 'tuple'; items: Expr[] };

type BinaryOp = '+' | '-' | '*' | '==' | '!=' | '<' | '<=' | '>' | '>=' | '&&' | '||';

/** Binary operators by precedence, loosest first, as in HCL. */
const LEVELS: BinaryOp[][] = [
  ['||'],
  ['&&'],
  ['==', '!='],
  ['<', '<=', '>', '>='],
  ['+', '-'],
  ['*'],
];

const refuse = (what: string, text: string): EvaluationError =>
  new EvaluationError(
    'Unsupported by the builtin engine: expression',
    `the builtin engine does not model ${what} in "${text}"; use the command engine (a terraform binary, chosen with the workspace's execution-engine) for this configuration`,
  );

type Token =
  | { t: 'op'; v: string }
  | { t: 'num'; v: number }
  | { t: 'str'; v: string }
  | { t: 'ident'; v: string };

const TRAVERSAL_START = /[A-Za-z_]/;

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i] ?? '';
    if (/\s/.test(c)) {
      i += 1;
    } else if (/[0-9]/.test(c)) {
      const m = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(i));
      const raw = m?.[0] ?? c;
      if (!/^[0-9]+$/.test(raw)) throw refuse('numbers that are not whole', text);
      if (!Number.isSafeInteger(Number(raw))) throw refuse('whole numbers past 2^53', text);
      tokens.push({ t: 'num', v: Number(raw) });
      i += raw.length;
    } else if (c === '"') {
      let j = i + 1;
      let out = '';
      for (;;) {
        const d = text[j];
        if (d === undefined) throw refuse('this string', text);
        if (d === '"') break;
        if (d === '\\') {
          const e = text[j + 1];
          const escapes: Record<string, string> = {
            n: '\n',
            t: '\t',
            '"': '"',
            '\\': '\\',
            r: '\r',
          };
          if (e === undefined || escapes[e] === undefined) throw refuse('this string escape', text);
          out += escapes[e];
          j += 2;
          continue;
        }
        if ((d === '$' || d === '%') && text[j + 1] === '{')
          throw refuse('templates inside an expression', text);
        out += d;
        j += 1;
      }
      tokens.push({ t: 'str', v: out });
      i = j + 1;
    } else if (TRAVERSAL_START.test(c)) {
      // A name, then any `.name`, `[n]` or `["k"]` steps: a traversal, or a function's name.
      const m = /^[A-Za-z_][\w-]*((?:\.[A-Za-z_][\w-]*|\[\d+\]|\["[^"]*"\])*)/.exec(text.slice(i));
      const raw = m?.[0] ?? c;
      tokens.push({ t: 'ident', v: raw });
      i += raw.length;
    } else if (text.startsWith('[*]', i) || text.startsWith('.*', i)) {
      throw refuse('splat expressions', text);
    } else {
      const two = text.slice(i, i + 2);
      const op = ['==', '!=', '<=', '>=', '&&', '||'].includes(two) ? two : c;
      if (
        ![
          '+',
          '-',
          '*',
          '<',
          '>',
          '!',
          '?',
          ':',
          '(',
          ')',
          ',',
          '[',
          ']',
          ...['==', '!=', '<=', '>=', '&&', '||'],
        ].includes(op)
      )
        throw refuse(`the operator or symbol "${op}"`, text);
      tokens.push({ t: 'op', v: op });
      i += op.length;
    }
  }
  return tokens;
}

/** Parses the text inside `${…}`; refuses what it does not model. */
export function parseExpression(text: string): Expr {
  const tokens = tokenize(text);
  let at = 0;
  const peek = (): Token | undefined => tokens[at];
  const isOp = (v: string) => {
    const tok = peek();
    return tok?.t === 'op' && tok.v === v;
  };
  const expect = (v: string) => {
    if (!isOp(v)) throw refuse(`this expression (expected "${v}")`, text);
    at += 1;
  };
  const conditional = (): Expr => {
    const condition = binary(0);
    if (!isOp('?')) return condition;
    at += 1;
    const then = conditional();
    expect(':');
    const otherwise = conditional();
    return { kind: 'conditional', condition, then, otherwise };
  };
  const binary = (level: number): Expr => {
    const ops = LEVELS[level];
    if (ops === undefined) return unary();
    let left = binary(level + 1);
    for (;;) {
      const tok = peek();
      const op = ops.find((o) => tok?.t === 'op' && tok.v === o);
      if (op === undefined) return left;
      at += 1;
      left = { kind: 'binary', op, left, right: binary(level + 1) };
    }
  };
  const unary = (): Expr => {
    if (isOp('!') || isOp('-')) {
      const op = (peek() as { v: '!' | '-' }).v;
      at += 1;
      return { kind: 'unary', op, operand: unary() };
    }
    return primary();
  };
  const primary = (): Expr => {
    const tok = peek();
    at += 1;
    if (tok === undefined) throw refuse('this expression', text);
    if (tok.t === 'num' || tok.t === 'str') return { kind: 'literal', value: tok.v };
    if (tok.t === 'op' && tok.v === '[') {
      // A tuple of expressions (a `for` expression starts the same way and is refused below).
      const items: Expr[] = [];
      while (!isOp(']')) {
        const next = peek();
        if (next?.t === 'ident' && next.v === 'for') throw refuse('for expressions', text);
        items.push(conditional());
        if (!isOp(']')) expect(',');
      }
      at += 1;
      return { kind: 'tuple', items };
    }
    if (tok.t === 'op' && tok.v === '(') {
      const inner = conditional();
      expect(')');
      return inner;
    }
    if (tok.t === 'ident') {
      if (tok.v === 'true' || tok.v === 'false')
        return { kind: 'literal', value: tok.v === 'true' };
      if (tok.v === 'null') return { kind: 'literal', value: null };
      if (isOp('(')) {
        at += 1;
        const args: Expr[] = [];
        while (!isOp(')')) {
          args.push(conditional());
          if (!isOp(')')) expect(',');
        }
        at += 1;
        if (!(tok.v in FUNCTIONS)) throw refuse(`the function ${tok.v}`, text);
        return { kind: 'call', name: tok.v, args };
      }
      if (isOp('[') || peek()?.t === 'ident') throw refuse('this expression', text);
      return { kind: 'reference', reference: parseReference(tok.v) };
    }
    throw refuse(`"${tok.v}" here`, text);
  };
  const expr = conditional();
  if (at < tokens.length) throw refuse('the rest of this expression', text);
  return expr;
}

/** Every reference an expression makes. */
export function referencesOf(expr: Expr): Reference[] {
  switch (expr.kind) {
    case 'literal':
      return [];
    case 'reference':
      return [expr.reference];
    case 'unary':
      return referencesOf(expr.operand);
    case 'binary':
      return [...referencesOf(expr.left), ...referencesOf(expr.right)];
    case 'conditional':
      return [expr.condition, expr.then, expr.otherwise].flatMap(referencesOf);
    case 'call':
      return expr.args.flatMap(referencesOf);
    case 'tuple':
      return expr.items.flatMap(referencesOf);
    default: {
      const _never: never = expr;
      return _never;
    }
  }
}

const isAscii = (s: string) => /^[\x20-\x7e\t\n]*$/.test(s);
const whole = (n: unknown): n is number => typeof n === 'number' && Number.isSafeInteger(n);

/** The functions evaluated, each on the values where terraform's result is plainly the same. */
const FUNCTIONS: Record<string, (args: Value[], text: string) => Value> = {
  upper: ([s = null], text) => ascii(s, 'upper', text).toUpperCase(),
  lower: ([s = null], text) => ascii(s, 'lower', text).toLowerCase(),
  trimspace: ([s = null], text) => ascii(s, 'trimspace', text).trim(),
  length: ([v = null], text) => {
    if (typeof v === 'string') return ascii(v, 'length', text).length;
    if (Array.isArray(v)) return v.length;
    if (v !== null && typeof v === 'object') return Object.keys(v).length;
    throw refuse('length of this value', text);
  },
  join: ([sep = null, list = null], text) => {
    const parts = Array.isArray(list) ? list : null;
    if (typeof sep !== 'string' || parts === null || !parts.every((p) => typeof p === 'string'))
      throw refuse('join of anything but a separator and a list of strings', text);
    return parts.join(sep);
  },
};

const ARITY: Record<string, number> = { upper: 1, lower: 1, trimspace: 1, length: 1, join: 2 };

function ascii(value: Value, fn: string, text: string): string {
  if (typeof value !== 'string' || !isAscii(value))
    throw refuse(`${fn} of anything but an ASCII string`, text);
  return value;
}

/** Evaluates a parsed expression; `resolve` reads a reference. Unknown in, unknown out. */
export function evaluateExpression(
  expr: Expr,
  resolve: (reference: Reference) => Value,
  text: string,
): Value {
  const ev = (e: Expr) => evaluateExpression(e, resolve, text);
  switch (expr.kind) {
    case 'literal':
      return expr.value;
    case 'reference':
      return resolve(expr.reference);
    case 'unary': {
      const v = ev(expr.operand);
      if (v === UNKNOWN) return UNKNOWN;
      if (expr.op === '!' && typeof v === 'boolean') return !v;
      if (expr.op === '-' && whole(v)) return -v;
      throw refuse(`"${expr.op}" on this value`, text);
    }
    case 'binary':
      return binaryOp(expr.op, ev(expr.left), ev(expr.right), text);
    case 'conditional': {
      const condition = ev(expr.condition);
      const a: Value = ev(expr.then);
      const b: Value = ev(expr.otherwise);
      // Terraform converts both results to one type: only results of one primitive type (or
      // null) are taken as they are.
      const kind = (v: Value) => (v === null || v === UNKNOWN ? null : typeof v);
      const [ka, kb] = [kind(a), kind(b)];
      if (
        (ka !== null && !['string', 'number', 'boolean'].includes(ka)) ||
        (kb !== null && !['string', 'number', 'boolean'].includes(kb)) ||
        (ka !== null && kb !== null && ka !== kb)
      )
        throw refuse('a conditional whose results differ in type or are collections', text);
      if ((a === null) !== (b === null) && (a === UNKNOWN || b === UNKNOWN))
        throw refuse('a conditional between null and an unknown value', text);
      if (condition === UNKNOWN) return UNKNOWN;
      if (typeof condition !== 'boolean') throw refuse('a condition that is not a bool', text);
      const chosen: Value = condition ? a : b;
      const other: Value = condition ? b : a;
      // Terraform gives the null the other result's type, which a terraform_data then records.
      if (chosen === null && other !== null)
        throw refuse(
          'a conditional choosing null against a value (terraform types that null)',
          text,
        );
      return chosen;
    }
    case 'tuple':
      return expr.items.map(ev);
    case 'call': {
      const args = expr.args.map(ev);
      const fn = FUNCTIONS[expr.name];
      if (fn === undefined) throw refuse(`the function ${expr.name}`, text);
      if (args.length !== ARITY[expr.name])
        throw refuse(`${expr.name} with ${args.length} arguments`, text);
      if (args.some((a) => a === UNKNOWN)) return UNKNOWN;
      return fn(args, text);
    }
    default: {
      const _never: never = expr;
      return _never;
    }
  }
}

function binaryOp(op: BinaryOp, l: Value, r: Value, text: string): Value {
  if (l === UNKNOWN || r === UNKNOWN) return UNKNOWN;
  switch (op) {
    case '+':
    case '-':
    case '*': {
      if (!whole(l) || !whole(r)) throw refuse(`"${op}" on anything but whole numbers`, text);
      const n = op === '+' ? l + r : op === '-' ? l - r : l * r;
      if (!Number.isSafeInteger(n)) throw refuse('numbers this large', text);
      return n;
    }
    case '==':
    case '!=': {
      const primitive = (v: Value) =>
        v === null || ['string', 'number', 'boolean'].includes(typeof v);
      if (!primitive(l) || !primitive(r)) throw refuse(`"${op}" on collections`, text);
      const same = jsonEqual(l as Json, r as Json);
      return op === '==' ? same : !same;
    }
    case '<':
    case '<=':
    case '>':
    case '>=':
      if (!whole(l) || !whole(r)) throw refuse(`"${op}" on anything but whole numbers`, text);
      return op === '<' ? l < r : op === '<=' ? l <= r : op === '>' ? l > r : l >= r;
    case '&&':
    case '||':
      if (typeof l !== 'boolean' || typeof r !== 'boolean')
        throw refuse(`"${op}" on anything but bools`, text);
      return op === '&&' ? l && r : l || r;
    default: {
      const _never: never = op;
      return _never;
    }
  }
}
