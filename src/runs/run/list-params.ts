import type { Context } from 'koa';
import { ValidationError } from '../../core/errors.js';
import { RUN_STATUSES, type RunStatus } from '../../../machines/run.machine.js';
import { listFilter, queryValue } from '../jsonapi.js';
import {
  RUN_OPERATIONS,
  RUN_STATUS_GROUPS,
  statusesOfGroup,
  type RunOperation,
  type RunStatusGroup,
} from '../lifecycle.js';
import type { RunFilters } from './queries.js';

/** Read the `filter[...]` and `search[...]` parameters of the two run lists. */

function oneOfEach<T extends string>(
  name: string,
  values: string[] | null,
  allowed: readonly T[],
): T[] | null {
  if (values === null) return null;
  for (const v of values) {
    if (!(allowed as readonly string[]).includes(v))
      throw new ValidationError(
        `${name}: ${JSON.stringify(v)} is not one of ${allowed.join(', ')}`,
      );
  }
  return values as T[];
}

const YEAR_MS = 365 * 24 * 3600 * 1000;

/**
 * `filter[timeframe]`: a year (`2025`) or `year` (the last 365 days). Omitted, the workspace list
 * returns everything and the organization list the last year.
 */
function timeframe(
  ctx: Context,
  now: Date,
  defaultLastYear: boolean,
): { from: string | null; before: string | null } {
  const raw = queryValue(ctx, 'filter[timeframe]');
  const lastYear = { from: new Date(now.getTime() - YEAR_MS).toISOString(), before: null };
  if (raw === undefined || raw === '')
    return defaultLastYear ? lastYear : { from: null, before: null };
  if (raw === 'year') return lastYear;
  if (!/^\d{4}$/.test(raw))
    throw new ValidationError(
      `filter[timeframe]: ${JSON.stringify(raw)} is neither a year nor "year"`,
    );
  const y = Number(raw);
  return {
    from: new Date(Date.UTC(y, 0, 1)).toISOString(),
    before: new Date(Date.UTC(y + 1, 0, 1)).toISOString(),
  };
}

/** Every filter of a run list, validated. */
export function runFilters(
  ctx: Context,
  now: Date,
  list: 'workspace' | 'organization',
): RunFilters {
  const operations = oneOfEach<RunOperation>(
    'filter[operation]',
    listFilter(ctx, 'filter[operation]'),
    RUN_OPERATIONS,
  );
  let statuses: readonly RunStatus[] | null = oneOfEach<RunStatus>(
    'filter[status]',
    listFilter(ctx, 'filter[status]'),
    RUN_STATUSES,
  );
  const group = queryValue(ctx, 'filter[status_group]');
  if (group !== undefined && group !== '') {
    const [g] = oneOfEach<RunStatusGroup>('filter[status_group]', [group], RUN_STATUS_GROUPS)!;
    const inGroup = statusesOfGroup(g!);
    statuses = statuses === null ? inGroup : statuses.filter((s) => inGroup.includes(s));
  }
  const workspaceNames = listFilter(ctx, 'filter[workspace_names]');
  if (workspaceNames !== null && list === 'workspace')
    throw new ValidationError('filter[workspace_names] is only valid on the organization run list');
  const { from, before } = timeframe(ctx, now, list === 'organization');
  const search = (name: string) => {
    const v = queryValue(ctx, name);
    return v === undefined || v === '' ? null : v;
  };
  return {
    operations,
    statuses,
    sources: listFilter(ctx, 'filter[source]'),
    agentPoolNames: listFilter(ctx, 'filter[agent_pool_names]'),
    workspaceNames,
    createdFrom: from,
    createdBefore: before,
    searchUser: search('search[user]'),
    searchCommit: search('search[commit]'),
    // search[basic] is ignored when search[commit] or search[user] is present
    searchBasic:
      search('search[commit]') === null && search('search[user]') === null
        ? search('search[basic]')
        : null,
  };
}
