import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { httpsCall } from '../../support/https.js';
import { cloudBlock, useTerraformHost, TerraformWorkdir } from '../../support/terraform.js';

/**
 * The audit trail of a run the real terraform CLI starts: it creates a configuration version with
 * its token, uploads the archive to a secret address without one, and the upload queues the run.
 * The run is recorded as started by the token that created the version.
 */

const terraformHost = useTerraformHost((h) => h.organization('acme'));

interface AuditEvent {
  stream: string;
  type: string;
  actor: { accessor: string; name: string } | null;
}

describe('the actor of a run the CLI starts', () => {
  it('records the configuration version creator on the upload and on every event of the run', async () => {
    const host = terraformHost();
    const created = await host.api('POST', '/organizations/acme/workspaces', {
      data: { type: 'workspaces', attributes: { name: 'audited', 'execution-engine': 'builtin' } },
    });
    expect(created.status, created.text).toBe(201);
    const work = new TerraformWorkdir(host, {
      files: {
        'main.tf': `${cloudBlock(host, 'acme', 'audited')}\nresource "terraform_data" "a" {\n  input = "x"\n}\n`,
      },
    });
    const init = await work.run(['init', '-input=false', '-no-color']);
    expect(init.code, init.stderr).toBe(0);
    const plan = await work.run(['plan', '-input=false', '-no-color']);
    expect(plan.code, `${plan.stdout}\n${plan.stderr}`).toBe(0);

    const wsId = (created.json as { data: { id: string } }).data.id;
    const runs = await host.api('GET', `/workspaces/${wsId}/runs?filter[operation]=plan_only`);
    const run = (runs.json as { data: { id: string; relationships: Record<string, unknown> }[] })
      .data[0]!;
    const cvId = (run.relationships['configuration-version'] as { data: { id: string } }).data.id;

    const ca = readFileSync(host.caFile, 'utf8');
    const root = host.daemon.bootstrap().secrets.root_token;
    const eventsOf = async (stream: string): Promise<AuditEvent[]> => {
      const res = await httpsCall('GET', `${host.url}/v1/sys/audit/events?stream=${stream}`, ca, {
        headers: { 'x-vault-token': root },
      });
      expect(res.status, res.body).toBe(200);
      return (JSON.parse(res.body) as { data: { events: AuditEvent[] } }).data.events;
    };
    const cvEvents = await eventsOf(cvId);
    const creator = cvEvents.find((e) => e.type === 'ConfigurationVersionCreated')!.actor;
    expect(creator).not.toBeNull();
    expect(creator!.accessor).not.toBe('system');
    expect(cvEvents.find((e) => e.type === 'ConfigurationVersionUploaded')?.actor).toEqual(creator);
    const runEvents = await eventsOf(run.id);
    expect(runEvents.find((e) => e.type === 'RunCreated')?.actor).toEqual(creator);
    // No event of the run is recorded without an actor: the CLI's own calls carry its token,
    // and what Keel does on its own carries a named system actor.
    for (const e of runEvents) expect(e.actor, e.type).not.toBeNull();
  });
});
