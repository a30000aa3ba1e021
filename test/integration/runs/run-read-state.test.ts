import { describe, expect, it } from 'vitest';
import { RUNS_TABLE, runProjection } from '../../../src/runs/run/projection.js';
import { flowApp } from '../../support/executor-flow.js';

const CONFIG = { 'main.tf': 'resource "aws_instance" "web" {\n  ami = "ami-123"\n}\n' };

const started = flowApp();

describe("a run's state in its read model", () => {
  it('is named columns; a data directory whose runs table held the machine context is rebuilt on open', async () => {
    const { t, flow } = started;
    const { ws } = await flow.workspace();
    const cv = await flow.upload(ws, CONFIG);
    const paused = await flow.run(ws, {}, cv);
    await t.settle();
    const waiting = await flow.run(ws, {}, cv);
    await t.settle();
    expect(await flow.status(paused)).toBe('planned');
    expect(await flow.status(waiting)).toBe('pending');
    const read = async () => ({
      paused: (await flow.call('GET', `/runs/${paused}`, undefined, 200)).text,
      waiting: (await flow.call('GET', `/runs/${waiting}`, undefined, 200)).text,
      list: (await flow.call('GET', `/workspaces/${ws}/runs`, undefined, 200)).text,
    });
    const before = await read();
    expect((await flow.get(paused)).attributes.actions).toMatchObject({ 'is-confirmable': true });

    const { db } = t.app.core;
    const columns = () => Object.keys(db.prepare(`SELECT * FROM ${RUNS_TABLE} LIMIT 1`).get()!);
    expect(columns()).toEqual(
      expect.arrayContaining([
        'status',
        'plan_only',
        'save_plan',
        'auto_apply',
        'allow_empty_apply',
        'has_changes',
        'paused_for_confirmation',
        'cancel_requested_at',
        'force_cancel_available_at',
      ]),
    );
    expect(columns()).not.toContain('context');

    // The table as version 3 left it: the machine's context in a JSON column, no named state.
    db.exec(`DROP TABLE ${RUNS_TABLE}`);
    db.exec(`CREATE TABLE ${RUNS_TABLE} (
      id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE, workspace_id TEXT NOT NULL, organization TEXT NOT NULL,
      listed_seq INTEGER, status TEXT NOT NULL, operation TEXT NOT NULL, source TEXT NOT NULL,
      plan_only INTEGER NOT NULL, save_plan INTEGER NOT NULL, message TEXT NOT NULL, created_at TEXT NOT NULL,
      created_by_name TEXT, context TEXT NOT NULL, attrs TEXT NOT NULL, status_timestamps TEXT NOT NULL,
      plan TEXT NOT NULL, apply TEXT NOT NULL)`);
    db.prepare('UPDATE projection_versions SET version = ? WHERE name = ?').run(
      3,
      runProjection.name,
    );

    const pages = (after: number, limit: number) => t.app.core.store.readAll(after, limit);
    const { rebuilt } = t.app.projections.open(pages);
    expect(rebuilt).toEqual([runProjection.name]);
    expect(columns()).toContain('paused_for_confirmation');
    expect(columns()).not.toContain('context');
    expect(await read()).toEqual(before);
  });
});
