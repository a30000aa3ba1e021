import type { Context } from 'koa';
import { KeelError, ValidationError } from '../core/errors.js';

/** JSON:API building blocks shared by every runs-API presenter. */

export const MEDIA_TYPE = 'application/vnd.api+json';

export interface ResourceIdentifier {
  type: string;
  id: string;
}

export interface Resource extends ResourceIdentifier {
  attributes: Record<string, unknown>;
  relationships?: Record<string, Relationship>;
  links?: Record<string, string>;
}

export interface Relationship {
  data?: ResourceIdentifier | ResourceIdentifier[] | null;
  links?: Record<string, string>;
}

/** A to-one relationship; `null` ids become `{ data: null }`. */
export const toOne = (type: string, id: string | null, related?: string): Relationship => ({
  data: id === null ? null : { type, id },
  ...(related === undefined ? {} : { links: { related } }),
});

/** A to-many relationship known only by its link. */
export const linkOnly = (related: string): Relationship => ({ links: { related } });

export const API = '/api/v2';

/** Send a JSON:API document. */
export function send(ctx: Context, status: number, body: unknown): void {
  ctx.status = status;
  ctx.body = JSON.stringify(body);
  ctx.type = MEDIA_TYPE;
}

/** Page parameters: `page[number]` from 1, `page[size]` 1..100 (default 20). */
export interface Page {
  number: number;
  size: number;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

function positiveInt(raw: string | undefined, name: string): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new ValidationError(`${name} must be a positive integer`);
  return Number(raw);
}

/** One query value (the first if repeated). */
export function queryValue(ctx: Context, name: string): string | undefined {
  const v = ctx.query[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Read `page[number]` and `page[size]`; sizes above 100 are clamped, as the reference does. */
export function pageOf(ctx: Context): Page {
  const number = positiveInt(queryValue(ctx, 'page[number]'), 'page[number]') ?? 1;
  const size = Math.min(
    MAX_PAGE_SIZE,
    positiveInt(queryValue(ctx, 'page[size]'), 'page[size]') ?? DEFAULT_PAGE_SIZE,
  );
  return { number, size };
}

/** The absolute address of this request with another page number. */
function pageUrl(ctx: Context, page: number, size: number): string {
  const url = new URL(ctx.originalUrl, `${ctx.protocol}://${ctx.host || 'localhost'}`);
  url.searchParams.set('page[number]', String(page));
  url.searchParams.set('page[size]', String(size));
  return url.toString();
}

/**
 * `links` and `meta.pagination` of a list. With a total (workspace lists) they carry `first`,
 * `last`, `total-count` and `total-pages`; without one (organization lists) only `self`, `prev`,
 * `next`, and `next` is known from whether one more row than the page exists.
 */
export function paginate(ctx: Context, page: Page, info: { total: number } | { hasNext: boolean }) {
  const totalPages = 'total' in info ? Math.max(1, Math.ceil(info.total / page.size)) : null;
  const hasNext = 'total' in info ? page.number < (totalPages ?? 1) : info.hasNext;
  const next = hasNext ? page.number + 1 : null;
  const prev = page.number > 1 ? page.number - 1 : null;
  const link = (n: number | null) => (n === null ? null : pageUrl(ctx, n, page.size));
  const pagination: Record<string, number | null> = {
    'current-page': page.number,
    'next-page': next,
    'prev-page': prev,
    'page-size': page.size,
  };
  if ('total' in info) {
    pagination['total-count'] = info.total;
    pagination['total-pages'] = totalPages;
    return {
      links: {
        self: link(page.number),
        first: link(1),
        prev: link(prev),
        next: link(next),
        last: link(totalPages),
      },
      meta: { pagination },
    };
  }
  return {
    links: { self: link(page.number), prev: link(prev), next: link(next) },
    meta: { pagination },
  };
}

/** Parse `include=a,b` against the allowed values; anything else is a 400 naming the parameter. */
export function includesOf<T extends string>(ctx: Context, allowed: readonly T[]): Set<T> {
  const raw = queryValue(ctx, 'include');
  const out = new Set<T>();
  if (raw === undefined || raw === '') return out;
  for (const value of raw.split(',').map((v) => v.trim())) {
    if (!(allowed as readonly string[]).includes(value)) {
      throw new KeelError(
        'validation',
        `Invalid include parameter: ${value} is not one of ${allowed.join(', ')}`,
        {
          status: 400,
          title: 'invalid include parameter',
        },
      );
    }
    out.add(value as T);
  }
  return out;
}

/** Comma-separated filter values, or null when the filter is absent. */
export function listFilter(ctx: Context, name: string): string[] | null {
  const raw = queryValue(ctx, name);
  if (raw === undefined || raw === '') return null;
  return raw
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');
}
