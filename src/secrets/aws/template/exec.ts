import { createHash } from 'node:crypto';
import type { Command, Node, Operand, Pipeline } from './parse.js';
import { TemplateError } from './parse.js';
import type { Value } from './go-format.js';
import { goTimeFormat, show, sprint, sprintf } from './go-format.js';

/** What a template may read from the world: injected so renders are reproducible in tests. */
export interface TemplateEnv {
  now(): Date;
  /** `n` random characters from `[A-Za-z0-9]`. */
  random(n: number): string;
  uuid(): string;
}

type Kind = 'int' | 'string' | 'any';
interface Fn {
  params: readonly Kind[];
  /** Extra arguments of this kind may follow the fixed ones. */
  variadic?: Kind;
  call(args: Value[], env: TemplateEnv): Value;
}

const sha256hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** Cuts `s` to at most `n` UTF-8 bytes (Go slices bytes); a split character is dropped whole. */
export function cutBytes(s: string, n: number): string {
  const buf = Buffer.from(s, 'utf8');
  if (buf.length <= n) return s;
  let end = n;
  // Back up over UTF-8 continuation bytes so no character is cut in half.
  while (end > 0 && ((buf[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return buf.subarray(0, end).toString('utf8');
}

const truthy = (v: Value): boolean =>
  typeof v === 'string' ? v.length > 0 : typeof v === 'number' ? v !== 0 : v;

function equal(a: Value, b: Value): boolean {
  if (typeof a !== typeof b) throw new Error('incompatible types for comparison');
  return a === b;
}

function compare(op: string, a: Value, b: Value): boolean {
  if (typeof a !== typeof b || typeof a === 'boolean')
    throw new Error(`invalid type for comparison`);
  switch (op) {
    case 'lt':
      return a < b;
    case 'le':
      return a <= b;
    case 'gt':
      return a > b;
    default:
      return a >= b;
  }
}

/** The function map: Vault's username-template helpers plus the Go built-ins they are used with. */
const FUNCS: Record<string, Fn> = {
  unix_time: { params: [], call: (_a, env) => String(Math.floor(env.now().getTime() / 1000)) },
  unix_time_millis: { params: [], call: (_a, env) => String(env.now().getTime()) },
  timestamp: {
    params: ['string'],
    call: ([layout], env) => goTimeFormat(env.now(), layout as string),
  },
  uuid: { params: [], call: (_a, env) => env.uuid() },
  random: {
    params: ['int'],
    call: ([n], env) => {
      if ((n as number) < 1) throw new Error(`random length must be > 0 but was ${n as number}`);
      return env.random(n as number);
    },
  },
  truncate: {
    params: ['int', 'string'],
    call: ([n, s]) => {
      if ((n as number) <= 0) throw new Error(`max length must be > 0 but was ${n as number}`);
      return cutBytes(s as string, n as number);
    },
  },
  truncate_sha256: {
    params: ['int', 'string'],
    call: ([n, s]) => {
      const max = n as number;
      const str = s as string;
      if (max <= 8) throw new Error(`max length must be > 8 but was ${max}`);
      if (bytes(str) <= max) return str;
      const head = cutBytes(str, max - 8);
      return head + sha256hex(str.slice(head.length)).slice(0, 8);
    },
  },
  uppercase: { params: ['string'], call: ([s]) => (s as string).toUpperCase() },
  lowercase: { params: ['string'], call: ([s]) => (s as string).toLowerCase() },
  replace: {
    params: ['string', 'string', 'string'],
    call: ([find, repl, s]) => (s as string).split(find as string).join(repl as string),
  },
  sha256: { params: ['string'], call: ([s]) => sha256hex(s as string) },
  base64: {
    params: ['string'],
    call: ([s]) => Buffer.from(s as string, 'utf8').toString('base64'),
  },
  printf: {
    params: ['string'],
    variadic: 'any',
    call: ([f, ...rest]) => sprintf(f as string, rest),
  },
  print: { params: [], variadic: 'any', call: (args) => sprint(args) },
  len: { params: ['string'], call: ([s]) => bytes(s as string) },
  eq: {
    params: ['any', 'any'],
    variadic: 'any',
    call: ([a, ...rest]) => rest.some((b) => equal(a as Value, b)),
  },
  ne: { params: ['any', 'any'], call: ([a, b]) => !equal(a as Value, b as Value) },
  lt: { params: ['any', 'any'], call: ([a, b]) => compare('lt', a as Value, b as Value) },
  le: { params: ['any', 'any'], call: ([a, b]) => compare('le', a as Value, b as Value) },
  gt: { params: ['any', 'any'], call: ([a, b]) => compare('gt', a as Value, b as Value) },
  ge: { params: ['any', 'any'], call: ([a, b]) => compare('ge', a as Value, b as Value) },
  not: { params: ['any'], call: ([a]) => !truthy(a as Value) },
  and: {
    params: ['any'],
    variadic: 'any',
    call: (args) => args.find((a) => !truthy(a)) ?? (args.at(-1) as Value),
  },
  or: {
    params: ['any'],
    variadic: 'any',
    call: (args) => args.find(truthy) ?? (args.at(-1) as Value),
  },
};

/** Names a template may call; used by the parser-independent check in `compile`. */
export const FUNCTION_NAMES: readonly string[] = Object.keys(FUNCS);

/** Fails at compile time on a call to an unknown function, as Go's parser does. */
export function checkFunctions(nodes: readonly Node[], name: string): void {
  const pipe = (p: Pipeline) => {
    for (const c of p) {
      for (const o of c.operands) {
        if (o.kind === 'func' && !(o.name in FUNCS)) {
          throw new TemplateError(
            'parse',
            `template: ${name}:${c.line}: function "${o.name}" not defined`,
          );
        }
        if (o.kind === 'pipeline') pipe(o.pipeline);
      }
    }
  };
  for (const n of nodes) {
    if (n.kind === 'action') pipe(n.pipeline);
    if (n.kind === 'if') {
      pipe(n.cond);
      checkFunctions(n.then, name);
      checkFunctions(n.otherwise, name);
    }
  }
}

/** Executes a parsed template against `data` (the `.Field` values). */
export function execute(
  nodes: readonly Node[],
  data: Readonly<Record<string, string>>,
  env: TemplateEnv,
  name: string,
): string {
  const fail = (line: number, msg: string): never => {
    throw new TemplateError('exec', `template: ${name}:${line}: executing "${name}": ${msg}`);
  };

  const operand = (o: Operand, line: number): Value => {
    switch (o.kind) {
      case 'string':
      case 'number':
      case 'bool':
        return o.value;
      case 'dot':
        return fail(
          line,
          'the data of a username template has no printable value; use a field such as .DisplayName',
        );
      case 'field': {
        const v = data[o.name];
        if (v === undefined)
          return fail(line, `can't evaluate field ${o.name} in type UsernameMetadata`);
        return v;
      }
      case 'func':
        return call(o.name, [], line);
      case 'pipeline':
        return pipeline(o.pipeline);
      default: {
        const _never: never = o;
        return _never;
      }
    }
  };

  const call = (fnName: string, args: Value[], line: number): Value => {
    const fn = FUNCS[fnName];
    if (!fn) return fail(line, `function "${fnName}" not defined`);
    const fixed = fn.params.length;
    if (args.length < fixed || (!fn.variadic && args.length > fixed)) {
      return fail(
        line,
        `error calling ${fnName}: wrong number of args for ${fnName}: want ${fn.variadic ? 'at least ' : ''}${fixed} got ${args.length}`,
      );
    }
    args.forEach((a, i) => {
      const kind = i < fixed ? (fn.params[i] as Kind) : (fn.variadic as Kind);
      const ok =
        kind === 'any' ||
        (kind === 'string' ? typeof a === 'string' : typeof a === 'number' && Number.isInteger(a));
      if (!ok)
        fail(
          line,
          `error calling ${fnName}: wrong type for value; expected ${kind}; got ${typeof a === 'boolean' ? 'bool' : typeof a === 'number' ? 'int' : 'string'}`,
        );
    });
    try {
      return fn.call(args, env);
    } catch (e) {
      return fail(line, `error calling ${fnName}: ${(e as Error).message}`);
    }
  };

  const command = (c: Command, piped: Value | undefined): Value => {
    const [head, ...rest] = c.operands as [Operand, ...Operand[]];
    if (head.kind === 'func') {
      const args = rest.map((o) => operand(o, c.line));
      if (piped !== undefined) args.push(piped);
      return call(head.name, args, c.line);
    }
    if (rest.length > 0 || piped !== undefined) {
      return fail(c.line, `can't give argument to non-function ${describe(head)}`);
    }
    return operand(head, c.line);
  };

  const pipeline = (p: Pipeline): Value => {
    let value: Value | undefined;
    for (const c of p) value = command(c, value);
    return value as Value;
  };

  const run = (list: readonly Node[]): string => {
    let out = '';
    for (const n of list) {
      switch (n.kind) {
        case 'text':
          out += n.text;
          break;
        case 'action':
          out += show(pipeline(n.pipeline));
          break;
        case 'if':
          out += run(truthy(pipeline(n.cond)) ? n.then : n.otherwise);
          break;
        default: {
          const _never: never = n;
          return _never;
        }
      }
    }
    return out;
  };
  return run(nodes);
}

function describe(o: Operand): string {
  switch (o.kind) {
    case 'string':
      return JSON.stringify(o.value);
    case 'number':
    case 'bool':
      return String(o.value);
    case 'dot':
      return '.';
    case 'field':
      return `.${o.name}`;
    case 'func':
      return o.name;
    case 'pipeline':
      return '(pipeline)';
    default: {
      const _never: never = o;
      return _never;
    }
  }
}
