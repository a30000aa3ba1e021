import { spawnSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudBlock, TerraformWorkdir, useTerraformHost } from '../../support/terraform.js';

/**
 * A workspace's generic webhook while the real terraform CLI applies in it: every chosen trigger
 * reaches a local listener, a refused first attempt is tried again, and the signature header is
 * the HMAC-SHA512 `openssl dgst` computes over the body with the token.
 */

const TOKEN = 'interop-webhook-token';
const received: { headers: IncomingHttpHeaders; body: string }[] = [];
let refuseNext = 1;
const server = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    received.push({ headers: req.headers, body });
    res.statusCode = refuseNext-- > 0 ? 503 : 204;
    res.end();
  });
});
let hook = '';
beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  hook = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

// A short backoff, so the refused attempt's retry comes within the test (30 s by default).
const terraformHost = useTerraformHost((h) => h.organization('acme'), {
  env: { KEEL_NOTIFICATION_RETRY_MS: '200' },
});

/** `openssl dgst -sha512 -hmac KEY` over the body: the hex digest. */
function opensslHmac(body: string): string {
  const out = spawnSync('openssl', ['dgst', '-sha512', '-hmac', TOKEN, '-r'], { input: body });
  expect(out.status, out.stderr.toString()).toBe(0);
  return out.stdout.toString().split(' ')[0]!;
}

type Payload = { run_id: string; notifications: { trigger: string; run_status: string }[] };

describe('a webhook during a terraform apply', () => {
  it('delivers each chosen trigger, signed, and retries a refused attempt', async () => {
    const host = terraformHost();
    const ws = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'hooked' } },
    });
    expect(ws.status, ws.text).toBe(201);
    const wsId = (ws.json as { data: { id: string } }).data.id;
    const nc = await host.api('POST', `/workspaces/${wsId}/notification-configurations`, {
      data: {
        type: 'notification-configurations',
        attributes: {
          'destination-type': 'generic',
          name: 'ci',
          url: hook,
          enabled: true,
          token: TOKEN,
          triggers: ['run:created', 'run:applying', 'run:completed'],
        },
      },
    });
    expect(nc.status, nc.text).toBe(201);
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'hooked')}\nresource "terraform_data" "a" {\n  input = "x"\n}\n`,
      },
    });
    expect((await work.run(['init', '-input=false', '-no-color'])).code).toBe(0);
    const apply = await work.run(['apply', '-auto-approve', '-input=false', '-no-color']);
    expect(apply.code, apply.stdout + apply.stderr).toBe(0);

    const delivered = () =>
      received.map((r) => (JSON.parse(r.body) as Payload).notifications[0]!.trigger);
    await expect.poll(() => delivered().length, { timeout: 15_000 }).toBe(4);
    // the refused first attempt was for run:created, which came again after its backoff
    expect(delivered()[0]).toBe('run:created');
    expect(delivered().filter((t) => t === 'run:created')).toHaveLength(2);
    expect(delivered().filter((t) => t !== 'run:created')).toEqual([
      'run:applying',
      'run:completed',
    ]);
    const created = received.filter((r) => r.body === received[0]!.body);
    expect(created).toHaveLength(2);
    for (const r of received)
      expect(r.headers['x-tfe-notification-signature']).toBe(opensslHmac(r.body));
    const completed = received
      .map((r) => JSON.parse(r.body) as Payload)
      .find((p) => p.notifications[0]!.trigger === 'run:completed');
    expect(completed?.notifications[0]!.run_status).toBe('applied');
  });
});
