import type { Context } from 'koa';
import { NotFoundError, ValidationError } from '../core/errors.js';
import { verifyChain } from '../core/anchors.js';
import type { EventStore } from '../core/event-store.js';
import { Lru } from '../core/lru.js';
import { whenAnotherProcessCommits } from '../core/read-memo.js';
import { SCHEDULE_TABLE } from '../core/schedule.js';
import { redactSealed } from '../core/seal.js';
import { sendVault } from '../http/vault.js';
import {
  declarePath,
  field,
  segmentsOnly,
  type Fields,
  type PathSchema,
} from '../secrets/fields.js';
import { route, type Handler, type PathRoute } from '../secrets/route.js';
import { parseAuditFilter, queryAuditEvents } from './audit-queries.js';
import { neighbourhood, toDot, toMermaid, toSvg } from './diagram.js';
import type { StreamRegistry } from './streams.js';

export interface AuditRouteDeps {
  store: EventStore;
  registry: StreamRegistry;
  watch: AppendWatch;
}

/** The longest a watch request is held open, in seconds. */
export const MAX_WATCH_SECONDS = 60;

/**
 * Long polling on the log: a request waits until the log grows past a position (or a timeout).
 * The browser sends its token in a header, which `EventSource` cannot, so live updates are long
 * polls rather than server-sent events.
 */
export class AppendWatch {
  readonly #store: EventStore;
  readonly #waiters = new Set<() => void>();
  readonly #unsubscribe: () => void;

  constructor(store: EventStore) {
    this.#store = store;
    this.#unsubscribe = store.onAppended(() => this.#wakeAll());
    // With `--workers`, another process's append wakes the waiters too (ADR 0080).
    whenAnotherProcessCommits(store.db, () => this.#wakeAll());
  }

  /** Resolve with the last position once it is past `after`, or after `timeoutMs` regardless. */
  wait(after: number, timeoutMs: number, aborted?: AbortSignal): Promise<number> {
    const last = this.#store.lastPosition();
    if (last > after || timeoutMs <= 0) return Promise.resolve(last);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        aborted?.removeEventListener('abort', done);
        resolve(this.#store.lastPosition());
      };
      const timer = setTimeout(done, timeoutMs);
      timer.unref();
      aborted?.addEventListener('abort', done);
      this.#waiters.add(done);
    });
  }

  get waiting(): number {
    return this.#waiters.size;
  }

  /** Answer every waiting request now (shutdown). */
  close(): void {
    this.#unsubscribe();
    this.#wakeAll();
  }

  #wakeAll(): void {
    for (const w of [...this.#waiters]) w();
  }
}

const one = (ctx: Context, key: string): string | undefined => {
  const v = ctx.query[key];
  return Array.isArray(v) ? v[v.length - 1] : v;
};

const bool = (ctx: Context, key: string): boolean => {
  const v = one(ctx, key);
  if (v === undefined || v === '' || v === 'false' || v === '0') return false;
  if (v === 'true' || v === '1') return true;
  throw new ValidationError(`${key} must be true or false, got "${v}"`);
};

/** What the audit paths' handlers share: the log, the machines, the watch, drawn diagrams. */
export interface AuditScope extends AuditRouteDeps {
  /** Diagrams drawn as SVG, by their DOT source. */
  readonly svgCache: Lru<string, string>;
}

export const auditScope = (deps: AuditRouteDeps): AuditScope => ({
  ...deps,
  svgCache: new Lru<string, string>(200),
});

const machineOr404 = (registry: StreamRegistry, name: string) => {
  const kind = registry.kind(name);
  const graph = registry.graph(name);
  if (kind === undefined || graph === undefined)
    throw new NotFoundError(`no machine named "${name}"`);
  return { kind, graph };
};

/**
 * A read-only path behind the `/ui` page, under `/v1/sys/audit/`. The system backend serves these
 * with its own paths (sys/paths-all.ts), so they pass through the `/v1` token and ACL checks like
 * every `sys/` path (`read` on `sys/audit/*`, no sudo). The handlers read their query parameters
 * themselves, with the messages docs/api/audit.md gives; the declared fields say what they are.
 */
const auditRoute = <F extends Fields>(
  schema: PathSchema<F>,
  read: Handler<AuditScope, F>,
): PathRoute<AuditScope> => route(schema, { read });

/** A query parameter of a read (sent as `?name=value`). */
const query = {
  string: (description: string) => field.string(description, { query: true }),
  int: (description: string, value?: number) =>
    field.int(description, { query: true, ...(value === undefined ? {} : { default: value }) }),
  bool: (description: string) => field.bool(description, { query: true, default: false }),
} as const;

const EVENTS = auditRoute(
  declarePath({
    pattern: 'sys/audit/events',
    summary: 'The event log, newest first, filtered',
    operations: ['read'],
    fields: {
      stream: query.string('Exactly this stream'),
      stream_prefix: query.string('Streams whose name starts with this'),
      type: query.string('Exactly this event type'),
      actor: query.string("The actor's display name or token accessor, exactly"),
      since: query.string('Events at or after this ISO 8601 time'),
      until: query.string('Events at or before this ISO 8601 time'),
      before: query.int('Only events before this position (the next page)'),
      limit: query.int('How many events, 1 to 500', 100),
    },
  }),
  (ctx, { store }) => {
    const filter = parseAuditFilter(ctx.query);
    const events = queryAuditEvents(store.db, filter);
    const last = events.at(-1);
    sendVault(ctx, {
      events,
      last_position: store.lastPosition(),
      next_before: events.length === filter.limit && last !== undefined ? last.position : null,
    });
  },
);

const VERIFY = auditRoute(
  segmentsOnly('sys/audit/verify', 'Walk the hash chain and check its anchors', ['read']),
  (ctx, { store }) => {
    const verdict = verifyChain(store.db, store.chain);
    sendVault(
      ctx,
      verdict.ok
        ? { ok: true, events: verdict.events, anchors: verdict.anchors }
        : { ok: false, position: verdict.position, reason: verdict.reason },
    );
  },
);

const MACHINES = auditRoute(
  segmentsOnly('sys/audit/machines', 'Every machine with its states and live counts', ['read']),
  (ctx, { registry }) => {
    sendVault(ctx, {
      machines: registry.kinds.map((k) => {
        const graph = registry.graph(k.name)!;
        const counts = registry.counts(k.name);
        return {
          name: k.name,
          id: graph.id,
          stream_prefix: k.streamPrefix,
          states: graph.states
            .filter((s) => !s.compound)
            .map((s) => ({ name: s.name, final: s.final, count: counts[s.name] ?? 0 })),
          events: [...new Set(graph.transitions.map((t) => t.event))].sort(),
        };
      }),
    });
  },
);

const MACHINE_STREAMS = auditRoute(
  declarePath({
    pattern: 'sys/audit/machines/:name/streams',
    summary: "A machine's streams with their current state",
    operations: ['read'],
    fields: { name: field.string('The machine', { required: true }) },
  }),
  (ctx, { registry }) => {
    const { kind } = machineOr404(registry, ctx.params.name!);
    sendVault(ctx, { machine: kind.name, streams: registry.streams(kind.name) });
  },
);

const MACHINE_DIAGRAM = auditRoute(
  declarePath({
    pattern: 'sys/audit/machines/:name/diagram',
    summary: "A machine's diagram (SVG, DOT or Mermaid)",
    operations: ['read'],
    fields: {
      name: field.string('The machine', { required: true }),
      format: field.string('The drawing', {
        query: true,
        default: 'svg',
        allowed: ['svg', 'dot', 'mermaid'],
      }),
      counts: query.bool('Write the live count of streams under each state'),
      highlight: query.string('A state to fill'),
      focus: query.string('Only the states near this one'),
      depth: query.int('How near to focus, 1 to 9 transitions', 1),
    },
  }),
  async (ctx, { registry, svgCache }) => {
    const whole = machineOr404(registry, ctx.params.name!).graph;
    // `focus=<state>`: only the states within `depth` (default 1) transitions of it.
    const focus = one(ctx, 'focus');
    const depthText = one(ctx, 'depth') ?? '1';
    if (!/^[1-9]$/.test(depthText)) throw new ValidationError('depth must be a number from 1 to 9');
    if (focus !== undefined && !whole.states.some((s) => s.name === focus || s.id === focus))
      throw new ValidationError(`the machine has no state "${focus}"`);
    const graph = focus === undefined ? whole : neighbourhood(whole, focus, Number(depthText));
    const format = one(ctx, 'format') ?? 'svg';
    const counts = bool(ctx, 'counts') ? registry.counts(ctx.params.name!) : undefined;
    const highlight = one(ctx, 'highlight');
    switch (format) {
      case 'mermaid':
        ctx.type = 'text/plain';
        ctx.body = toMermaid(graph);
        return;
      case 'dot':
        ctx.type = 'text/vnd.graphviz';
        ctx.body = toDot(graph, { highlight, counts });
        return;
      case 'svg': {
        const dot = toDot(graph, { highlight, counts });
        let svg = svgCache.get(dot);
        if (svg === undefined) {
          svg = await toSvg(dot);
          svgCache.set(dot, svg);
        }
        ctx.type = 'image/svg+xml';
        ctx.body = svg;
        return;
      }
      default:
        throw new ValidationError(`format must be svg, dot or mermaid, got "${format}"`);
    }
  },
);

// A stream name may hold slashes (`mount-aws/`, lease ids). /v1 paths are decoded once and
// lose one trailing slash (docs/security.md), so a name that is not a stream is also tried
// with the slash it may have lost.
const STREAM = auditRoute(
  declarePath({
    pattern: 'sys/audit/streams/*stream',
    summary: "A stream's history, each event with the state as of it",
    operations: ['read'],
    fields: { stream: field.string('The stream (URL-encoded)', { required: true }) },
  }),
  (ctx, { registry }) => {
    const stream = ctx.params.stream!;
    let history = registry.history(stream);
    if (history.history.length === 0) history = registry.history(`${stream}/`);
    if (history.history.length === 0) throw new NotFoundError(`stream "${stream}" has no events`);
    sendVault(ctx, history);
  },
);

const SCHEDULE = auditRoute(
  segmentsOnly('sys/audit/schedule', 'Every due time of the schedule', ['read']),
  (ctx, { store }) => {
    const rows = store.db
      .prepare<[], { key: string; kind: string; due_at: string; data: string }>(
        `SELECT key, kind, due_at, data FROM ${SCHEDULE_TABLE} ORDER BY due_at, key`,
      )
      .all();
    sendVault(ctx, {
      entries: rows.map((r) => ({
        key: r.key,
        kind: r.kind,
        due_at: r.due_at,
        data: redactSealed(JSON.parse(r.data) as unknown),
      })),
    });
  },
);

const WATCH = auditRoute(
  declarePath({
    pattern: 'sys/audit/watch',
    summary: 'Wait until the log holds an event after a position (long polling)',
    operations: ['read'],
    fields: {
      after: query.int('The position to wait past', 0),
      timeout: query.int(`The longest wait, 0 to ${MAX_WATCH_SECONDS} seconds`, 25),
    },
  }),
  async (ctx, { watch }) => {
    const afterText = one(ctx, 'after') ?? '0';
    if (!/^\d+$/.test(afterText))
      throw new ValidationError(`after must be a position (0 or more), got "${afterText}"`);
    const timeoutText = one(ctx, 'timeout') ?? '25';
    const timeout = Number(timeoutText);
    if (!/^\d+$/.test(timeoutText) || timeout > MAX_WATCH_SECONDS)
      throw new ValidationError(`timeout must be 0 to ${MAX_WATCH_SECONDS} seconds`);
    const gone = new AbortController();
    ctx.res.once('close', () => gone.abort());
    const position = await watch.wait(Number(afterText), timeout * 1000, gone.signal);
    sendVault(ctx, { position });
  },
);

/** The audit page's paths, in the order the OpenAPI document lists them. */
export const AUDIT_PATHS: readonly PathRoute<AuditScope>[] = [
  EVENTS,
  VERIFY,
  MACHINES,
  MACHINE_STREAMS,
  MACHINE_DIAGRAM,
  STREAM,
  SCHEDULE,
  WATCH,
];
