import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { machines } from '../../../machines/index.js';
import { SUMMARY_CHARS, summarise } from '../../../src/cli/log.js';
import { keel } from '../../support/cli.js';

const empty = () => mkdtempSync(join(tmpdir(), 'keel-cli-'));

describe('the keel CLI', () => {
  it('answers help in every spelling with exit 0, and a bare keel with usage and exit 2', async () => {
    for (const args of [['help'], ['--help'], ['-h']]) {
      const r = await keel(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toContain('usage: keel <command>');
    }
    for (const args of [
      ['events', '--help'],
      ['help', 'events'],
      ['token', '-h'],
    ]) {
      const r = await keel(args);
      expect(r.status).toBe(0);
      expect(r.stdout).toMatch(/^usage: keel (events|token)/);
    }
    const bare = await keel([]);
    expect(bare.status).toBe(2);
    expect(bare.stderr).toContain('usage: keel <command>');
  });

  it('refuses unknown commands, unknown flags and extra arguments with usage and exit 2', async () => {
    const data = empty();
    const cases: [string[], RegExp][] = [
      [['evnts'], /unknown command "evnts"/],
      [['events', '--limt', '5', '--data', data], /Unknown option '--limt'/],
      [['serve', '--tls-auto', '--data', data], /Unknown option '--tls-auto'/],
      [['events', 'extra', '--data', data], /unexpected argument "extra"/],
      [['audit', 'verify', 'now', '--data', data], /unexpected argument "now"/],
      [['audit', '--data', data], /missing argument/],
      [['diagram', 'run', 'lease'], /unexpected argument "lease"/],
      [['help', 'nothing'], /no help for nothing/],
    ];
    for (const [args, message] of cases) {
      const r = await keel(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr, args.join(' ')).toContain('usage:');
    }
  });

  it('lists every registered machine in keel help diagram', async () => {
    const r = await keel(['help', 'diagram']);
    const line = r.stdout.split('\n').find((l) => l.startsWith('machines: '));
    expect(line?.slice('machines: '.length).split(', ').sort()).toEqual(
      Object.keys(machines).sort(),
    );
    const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
    for (const name of Object.keys(machines)) expect(readme).toContain(`\`${name}\``);
  });

  it('asks which token before looking for a log, and names the missing log after', async () => {
    const data = empty();
    const none = await keel(['token', '--data', data]);
    expect(none.status).toBe(2);
    expect(none.stderr).toContain('which token? keel token runs | keel token secrets');
    expect(none.stderr).not.toContain('no event log');
    const runs = await keel(['token', 'runs', '--data', data]);
    expect(runs.status).toBe(2);
    expect(runs.stderr).toContain(`no event log at ${join(data, 'keel.sqlite')}`);
  });

  it('mints a secrets token only for an explicit --policy or --root, before looking for a log', async () => {
    const data = empty();
    for (const args of [[], ['--ttl', '1h'], ['--policy', ''], ['--root', '--policy', 'p']]) {
      const r = await keel(['token', 'secrets', '--data', data, ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(
        /keel token secrets needs --policy P\[,P\.\.\.\] or --root/,
      );
      expect(r.stderr, args.join(' ')).not.toContain('no event log');
    }
    for (const args of [['--policy', 'reader'], ['--root']]) {
      const r = await keel(['token', 'secrets', '--data', data, ...args]);
      expect(r.stderr, args.join(' ')).toContain('no event log');
    }
  });

  it('checks numbers and the exclusive --limit and --newest of events', async () => {
    const data = empty();
    writeFileSync(join(data, 'keel.sqlite'), '');
    const cases: [string[], string][] = [
      [['--limit', 'five'], '--limit takes a whole number'],
      [['--newest=-1'], '--newest takes a whole number'],
      [['--limit', '1', '--newest', '1'], 'cannot be combined'],
      [['--since', 'yesterday'], '--since takes an ISO 8601 time'],
    ];
    for (const [args, message] of cases) {
      const r = await keel(['events', '--data', data, ...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(message);
    }
  });

  it('takes KEEL_DATA when no --data is given', async () => {
    const data = empty();
    const r = await keel(['events'], { KEEL_DATA: data });
    expect(r.stderr).toContain(`no event log at ${join(data, 'keel.sqlite')}`);
  });
});

describe('event summaries', () => {
  it('shorten every long string, at any depth, to its start and length, and keep the rest', () => {
    const long = 'A'.repeat(SUMMARY_CHARS + 1);
    const edge = 'B'.repeat(SUMMARY_CHARS);
    const out = summarise({ a: long, b: [1, { c: long }], d: edge, e: null, f: true });
    expect(out).toEqual({
      a: `${'A'.repeat(48)}… (${SUMMARY_CHARS + 1} chars; --full prints all)`,
      b: [1, { c: `${'A'.repeat(48)}… (${SUMMARY_CHARS + 1} chars; --full prints all)` }],
      d: edge,
      e: null,
      f: true,
    });
  });
});
