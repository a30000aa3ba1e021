import { parseHcl } from '../../core/hcl.js';
import { ValidationError } from '../../core/errors.js';
import { Lru } from '../../core/lru.js';

export const CAPABILITIES = [
  'create',
  'read',
  'update',
  'patch',
  'delete',
  'list',
  'sudo',
  'deny',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

export interface PathRule {
  path: string;
  capabilities: Capability[];
}

/** Built-in policies, as the reference ships them (the parts Keel serves). */
export const BUILTIN_POLICIES: Readonly<Record<string, readonly PathRule[]>> = {
  default: [
    { path: 'auth/token/lookup-self', capabilities: ['read'] },
    { path: 'auth/token/renew-self', capabilities: ['update'] },
    { path: 'auth/token/revoke-self', capabilities: ['update'] },
    { path: 'sys/capabilities-self', capabilities: ['update'] },
    { path: 'sys/leases/lookup', capabilities: ['update'] },
    { path: 'sys/leases/renew', capabilities: ['update'] },
  ],
};

const isCapability = (c: unknown): c is Capability =>
  typeof c === 'string' && (CAPABILITIES as readonly string[]).includes(c);

/**
 * The older `policy = "..."` form of a path rule, and the capabilities each stands for in the
 * reference (beside `capabilities`, which adds to it).
 */
const OLDER_POLICIES: Readonly<Record<string, readonly Capability[]>> = {
  deny: ['deny'],
  read: ['read', 'list'],
  write: ['create', 'read', 'update', 'patch', 'delete', 'list'],
  sudo: ['create', 'read', 'update', 'patch', 'delete', 'list', 'sudo'],
};

/**
 * Parse a policy in the reference's syntax, HCL or JSON:
 * `path "pki/*" { capabilities = ["read", "list"] }`.
 */
export async function parsePolicy(name: string, text: string): Promise<PathRule[]> {
  let doc: unknown;
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      doc = JSON.parse(trimmed);
    } catch (err) {
      throw new ValidationError(`failed to parse policy: ${(err as Error).message}`);
    }
  } else {
    try {
      doc = await parseHcl(`${name}.hcl`, text);
    } catch (err) {
      throw new ValidationError(`failed to parse policy: ${String(err).replace(/^Error: /, '')}`);
    }
  }
  const paths = (doc as { path?: unknown } | null)?.path;
  if (paths === undefined) return [];
  if (typeof paths !== 'object' || paths === null || Array.isArray(paths)) {
    throw new ValidationError('failed to parse policy: "path" must be a block of path rules');
  }
  const rules: PathRule[] = [];
  for (const [path, body] of Object.entries(paths)) {
    const blocks = Array.isArray(body) ? (body as unknown[]) : [body];
    const caps = new Set<Capability>();
    for (const block of blocks) {
      const b = block as { capabilities?: unknown; policy?: unknown } | null;
      if (b?.policy !== undefined) {
        const older = typeof b.policy === 'string' ? OLDER_POLICIES[b.policy] : undefined;
        if (older === undefined) {
          throw new ValidationError(
            `failed to parse policy: path "${path}": invalid policy ${JSON.stringify(b.policy)}`,
          );
        }
        older.forEach((c) => caps.add(c));
        if (b.capabilities === undefined) continue;
      }
      const list = b?.capabilities;
      if (!Array.isArray(list)) {
        throw new ValidationError(
          `failed to parse policy: path "${path}" has no capabilities list`,
        );
      }
      for (const c of list) {
        if (!isCapability(c)) {
          throw new ValidationError(
            `failed to parse policy: path "${path}": invalid capability ${JSON.stringify(c)}`,
          );
        }
        caps.add(c);
      }
    }
    rules.push({ path, capabilities: [...caps].sort() });
  }
  return rules.sort((a, b) => a.path.localeCompare(b.path));
}

interface Pattern {
  path: string;
  caps: Set<Capability>;
}

const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Compiled path patterns: bounded, since policies (and so patterns) come and go. */
export const compiledPatterns = new Lru<string, RegExp>(4096);

/** `+` stands for one whole segment; a trailing `*` for any rest (prefix match). */
export function pathMatches(pattern: string, path: string): boolean {
  const re = compiledPatterns.getOrSet(pattern, () => {
    const glob = pattern.endsWith('*');
    const body = (glob ? pattern.slice(0, -1) : pattern)
      .split('/')
      .map((seg) => (seg === '+' ? '[^/]+' : escape(seg)))
      .join('/');
    return new RegExp(`^${body}${glob ? '.*' : ''}$`);
  });
  return re.test(path);
}

/** Higher is more specific, following the reference's priority order for overlapping patterns. */
function specificity(pattern: string): number[] {
  const firstWildcard = [pattern.indexOf('+'), pattern.indexOf('*')].filter((i) => i >= 0);
  const wildcardAt =
    firstWildcard.length === 0 ? Number.MAX_SAFE_INTEGER : Math.min(...firstWildcard);
  const plusCount = pattern.split('/').filter((s) => s === '+').length;
  return [wildcardAt, pattern.endsWith('*') ? 0 : 1, -plusCount, pattern.length];
}

function compare(a: number[], b: number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/**
 * The capabilities a set of policies grants on a path: rules for the same pattern are merged
 * (union, deny wins), and the most specific matching pattern decides.
 */
export function capabilitiesFor(
  policies: readonly (readonly PathRule[])[],
  path: string,
): Set<Capability> {
  const merged = new Map<string, Pattern>();
  for (const rules of policies) {
    for (const rule of rules) {
      const entry = merged.get(rule.path) ?? { path: rule.path, caps: new Set<Capability>() };
      for (const c of rule.capabilities) entry.caps.add(c);
      merged.set(rule.path, entry);
    }
  }
  let best: Pattern | undefined;
  for (const p of merged.values()) {
    if (!pathMatches(p.path, path)) continue;
    if (p.path === path) {
      best = p;
      break;
    }
    if (best === undefined || compare(specificity(p.path), specificity(best.path)) > 0) best = p;
  }
  if (best === undefined || best.caps.has('deny')) return new Set();
  return new Set(best.caps);
}
