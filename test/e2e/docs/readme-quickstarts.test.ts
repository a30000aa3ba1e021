import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, startDaemon, type RunningDaemon } from '../../support/daemon.js';
import { requireTerraform } from '../../support/terraform.js';

/**
 * The README's quick starts, run as written: every ```sh block preceded by a
 * `<!-- quickstart: NAME (npm start …) -->` marker is run by bash (`-e -o pipefail`, as a pasted
 * block that must not fail half-way) in a directory whose `data/` is the data directory of a
 * fresh daemon started with the flags the marker names after `npm start --`. Blocks that name the
 * same start share one daemon, in README order. Only two things change: port 8420 becomes the
 * daemon's free port, and lego's 5002 another free port. Each block must exit 0 and print every
 * `# prints:` line it carries.
 */

interface QuickStart {
  name: string;
  /** The flags after `npm start --`. */
  flags: string[];
  script: string;
  prints: string[];
}

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function quickStarts(): QuickStart[] {
  const found: QuickStart[] = [];
  const marker =
    /<!-- quickstart: ([a-z-]+) \(npm start(?: -- ([^)]*))?\) -->\s*```sh\n([\s\S]*?)```/g;
  for (const m of README.matchAll(marker)) {
    const script = m[3]!;
    found.push({
      name: m[1]!,
      flags: (m[2] ?? '').split(/\s+/).filter((f) => f !== ''),
      script,
      prints: [...script.matchAll(/^# prints: (.*)$/gm)].map((p) => p[1]!),
    });
  }
  return found;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as AddressInfo).port;
      s.close(() => resolve(p));
    });
  });

/** Run a block with bash in `cwd`; the clients it names come from the system (`/usr/bin`). */
function bash(
  script: string,
  cwd: string,
  home: string,
): Promise<{ status: number | null; output: string }> {
  const file = join(home, 'block.sh');
  writeFileSync(file, script);
  // This node first (the one running the suite), then the system's clients (Debian's aws).
  const path = [dirname(process.execPath), '/usr/bin', '/bin', process.env.PATH ?? ''].join(
    delimiter,
  );
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !k.startsWith('AWS_') && !k.startsWith('TF_')) env[k] = v;
  return new Promise((resolve) => {
    const child = spawn('bash', ['-e', '-o', 'pipefail', file], {
      cwd,
      env: { ...env, PATH: path, HOME: home, NO_COLOR: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, output });
    });
  });
}

const all = quickStarts();
const daemons = new Map<string, { d: RunningDaemon; cwd: string; port: string; acme: string }>();

afterAll(async () => {
  for (const { d } of daemons.values()) await d.stop();
});

describe('the README quick starts', () => {
  it('are there for the PKI, runs, the cloud credentials engine, terraform and ACME', () => {
    expect(all.map((q) => q.name)).toEqual(['pki', 'runs', 'aws', 'terraform', 'acme']);
    for (const q of all) expect(q.prints.length, q.name).toBeGreaterThan(0);
  });

  for (const q of all) {
    it(
      `${q.name}: runs as written against npm start ${q.flags.join(' ')}`.trim(),
      async () => {
        if (q.name === 'terraform') requireTerraform();
        const key = q.flags.join(' ');
        let at = daemons.get(key);
        if (at === undefined) {
          const cwd = mkdtempSync(join(tmpdir(), 'keel-readme-'));
          const acme = String(await freePort());
          const d = await startDaemon({
            dataDir: join(cwd, 'data'),
            args: q.flags.map((f) => (f === '5002' ? acme : f)),
          });
          at = { d, cwd, port: new URL(d.url).port, acme };
          daemons.set(key, at);
        }
        const script = q.script.replaceAll(':8420', `:${at.port}`).replaceAll('5002', at.acme);
        const home = join(at.cwd, `home-${q.name}`);
        mkdirSync(home);
        const { status, output } = await bash(script, at.cwd, home);
        // terraform colours its output unless told not to; the README shows the text.
        const text = output.replace(/\u001b\[[0-9;]*m/g, '');
        expect(status, text).toBe(0);
        for (const line of q.prints) expect(text, `${q.name} prints "${line}"`).toContain(line);
      },
      180_000,
    );
  }
});
