import type { RouterContext } from '@koa/router';
import type Router from '@koa/router';
import { z } from 'zod';
import { NotFoundError, ValidationError } from '../../core/errors.js';
import { API, send, toOne, type Resource } from '../jsonapi.js';
import { need, type RunsModel } from '../model.js';
import { validate } from '../run/schema.js';
import { attempt, notificationDecider, payloadOf } from './deliver.js';
import { NOTIFICATION_TRIGGERS, type NotificationEvent } from './events.js';
import type { NotificationConfigRow, NotificationQueries } from './projection.js';

/**
 * `/workspaces/:id/notification-configurations` and `/notification-configurations/:id`: generic
 * webhooks only. Email, Slack and Microsoft Teams destinations, team notifications and the
 * assessment and auto-destroy triggers are refused by name.
 */

const url = z
  .string()
  .url()
  .refine((u) => /^https?:\/\//i.test(u), 'an http or https address');
const attributes = {
  name: z.string().min(1).max(255),
  'destination-type': z.string(),
  enabled: z.boolean(),
  url,
  token: z.string().nullable(),
  triggers: z.array(z.string()),
  'email-addresses': z.array(z.string()),
};
const createBody = z.object({
  data: z.object({
    type: z.literal('notification-configurations').optional(),
    attributes: z
      .object(attributes)
      .strict()
      .partial({ enabled: true, token: true, triggers: true, 'email-addresses': true }),
    relationships: z.object({}).strict().optional(),
  }),
});
const updateBody = z.object({
  data: z.object({
    type: z.literal('notification-configurations').optional(),
    id: z.string().optional(),
    attributes: z.object(attributes).strict().partial(),
  }),
});

function generic(type: string | undefined): void {
  if (type !== undefined && type !== 'generic')
    throw new ValidationError(
      `/data/attributes/destination-type: ${JSON.stringify(type)} is not available; Keel delivers generic webhooks only`,
      { title: 'invalid attribute' },
    );
}
function triggers(list: string[] | undefined) {
  for (const t of list ?? [])
    if (!(NOTIFICATION_TRIGGERS as readonly string[]).includes(t))
      throw new ValidationError(
        `/data/attributes/triggers: ${JSON.stringify(t)} is not a trigger Keel sends; one of ${NOTIFICATION_TRIGGERS.join(', ')}`,
        { title: 'invalid attribute' },
      );
  return list as (typeof NOTIFICATION_TRIGGERS)[number][] | undefined;
}
function noEmail(list: string[] | undefined) {
  if (list !== undefined && list.length > 0)
    throw new ValidationError('/data/attributes/email-addresses: Keel sends no email', {
      title: 'invalid attribute',
    });
}

export function notificationRoutes(
  router: Router,
  model: RunsModel,
  queries: NotificationQueries,
): void {
  const { handler, ids, sealer } = model.core;

  const present = (c: NotificationConfigRow): Resource => ({
    id: c.id,
    type: 'notification-configurations',
    attributes: {
      name: c.name,
      'destination-type': 'generic',
      enabled: c.enabled,
      url: c.url,
      // The token is write-only: the answer says only whether there is one.
      token: null,
      'has-token': c.token !== null,
      triggers: c.triggers,
      'email-addresses': [],
      'created-at': c.createdAt,
      'updated-at': c.updatedAt,
      'delivery-responses': queries.recent(c.id).map((d) => ({
        url: d.url,
        body: d.body,
        code: d.code === null ? '' : String(d.code),
        headers: {},
        'sent-at': d.sentAt,
        successful: String(d.successful),
        trigger: d.trigger,
        attempt: d.attempt,
      })),
    },
    relationships: { subscribable: toOne('workspaces', c.workspaceId), users: { data: [] } },
    links: { self: `${API}/notification-configurations/${c.id}` },
  });

  /** A configuration of a workspace the caller reads; `admin` when changing it. */
  const config = (ctx: RouterContext, admin: boolean) => {
    const c = queries.get(ctx.params.id!);
    if (c === null)
      throw new NotFoundError(`notification configuration ${ctx.params.id} not found`);
    const { access } = model.workspace(ctx, c.workspaceId);
    if (admin) need(access.admin, `notification configuration ${c.id}`);
    return c;
  };

  router.post('/workspaces/:id/notification-configurations', async (ctx) => {
    const { ws, access } = model.workspace(ctx, ctx.params.id!);
    need(access.admin, `notification configurations of workspace ${ws.id}`);
    const a = validate(createBody, ctx.request.body).data.attributes;
    generic(a['destination-type']);
    noEmail(a['email-addresses']);
    const id = ids.id('nc');
    await handler.handle(
      id,
      notificationDecider,
      (): NotificationEvent[] => [
        {
          type: 'NotificationConfigurationCreated',
          data: {
            id,
            organization: ws.organization,
            workspaceId: ws.id,
            name: a.name,
            url: a.url,
            enabled: a.enabled ?? false,
            triggers: triggers(a.triggers) ?? [],
            token:
              a.token === undefined || a.token === null || a.token === ''
                ? null
                : sealer.seal(a.token),
          },
        },
      ],
      model.metadata(ctx),
    );
    send(ctx, 201, { data: present(queries.get(id)!) });
  });

  router.get('/workspaces/:id/notification-configurations', (ctx) => {
    const { ws } = model.workspace(ctx, ctx.params.id!);
    send(ctx, 200, { data: queries.ofWorkspace(ws.id).map(present) });
  });

  router.get('/notification-configurations/:id', (ctx) =>
    send(ctx, 200, { data: present(config(ctx, false)) }),
  );

  router.patch('/notification-configurations/:id', async (ctx) => {
    const c = config(ctx, true);
    const a = validate(updateBody, ctx.request.body).data.attributes;
    generic(a['destination-type']);
    noEmail(a['email-addresses']);
    const list = triggers(a.triggers);
    await handler.handle(
      c.id,
      notificationDecider,
      (s): NotificationEvent[] => {
        if (!s.live) throw new NotFoundError(`notification configuration ${c.id} not found`);
        return [
          {
            type: 'NotificationConfigurationUpdated',
            data: {
              id: c.id,
              ...(a.name === undefined ? {} : { name: a.name }),
              ...(a.url === undefined ? {} : { url: a.url }),
              ...(a.enabled === undefined ? {} : { enabled: a.enabled }),
              ...(list === undefined ? {} : { triggers: list }),
              ...(a.token === undefined
                ? {}
                : { token: a.token === null || a.token === '' ? null : sealer.seal(a.token) }),
            },
          },
        ];
      },
      model.metadata(ctx),
    );
    send(ctx, 200, { data: present(queries.get(c.id)!) });
  });

  router.delete('/notification-configurations/:id', async (ctx) => {
    const c = config(ctx, true);
    await handler.handle(
      c.id,
      notificationDecider,
      (s): NotificationEvent[] =>
        s.live ? [{ type: 'NotificationConfigurationDeleted', data: { id: c.id } }] : [],
      model.metadata(ctx),
    );
    ctx.status = 204;
  });

  /** Send a verification payload now (one attempt, whatever `enabled` says) and show the result. */
  router.post('/notification-configurations/:id/actions/verify', async (ctx) => {
    const c = config(ctx, true);
    const at = model.core.clock.now().toISOString();
    const payload = payloadOf(
      model,
      c,
      { message: `Verification of ${c.name}`, trigger: 'verification', at },
      null,
    );
    await attempt(
      model.core,
      c,
      {
        delivery: `verify:${queries.verifications(c.id) + 1}`,
        attempt: 1,
        trigger: 'verification',
        payload,
      },
      model.metadata(ctx),
    );
    send(ctx, 200, { data: present(queries.get(c.id)!) });
  });
}
