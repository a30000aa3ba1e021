import { writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchAws } from './aws.js';
import { benchCli } from './cli.js';
import { benchCloud } from './cloud.js';
import { benchCommandPath } from './command-path.js';
import { benchCore } from './core.js';
import { benchPgClients } from './pg-clients.js';
import { benchPki } from './pki.js';
import { benchReadModels } from './read-models.js';
import { closeConnections } from './http.js';
import { benchRuns } from './runs.js';
import { benchStore } from './store.js';
import { benchWorkers } from './workers.js';
import type { BenchResult } from './support.js';

/** Every suite, in order; each returns its numbers, measured in this one run. */
const suites: { name: string; run: () => Promise<BenchResult[]> }[] = [
  { name: 'core', run: benchCore },
  { name: 'cloud', run: benchCloud },
  { name: 'aws', run: benchAws },
  { name: 'pki', run: benchPki },
  { name: 'runs', run: benchRuns },
  { name: 'cli', run: benchCli },
  { name: 'workers', run: benchWorkers },
  { name: 'store', run: benchStore },
  { name: 'read-models', run: benchReadModels },
  { name: 'command-path', run: benchCommandPath },
  { name: 'pg-clients', run: benchPgClients },
];

const only = process.argv.slice(2);
const sections: string[] = [];
for (const suite of suites) {
  if (only.length > 0 && !only.includes(suite.name)) continue;
  process.stderr.write(`bench: ${suite.name}…\n`);
  const results = await suite.run();
  const rows = results.map(
    (r) => `| ${r.name} | ${r.value.toLocaleString('en')} ${r.unit} | ${r.note ?? ''} |`,
  );
  sections.push(
    [`## ${suite.name}`, '', '| what | result | note |', '|---|---|---|', ...rows, ''].join('\n'),
  );
  for (const r of results)
    console.log(`${suite.name}: ${r.name}: ${r.value} ${r.unit}${r.note ? ` (${r.note})` : ''}`);
}

closeConnections();

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
const doc = [
  '# Benchmarks',
  '',
  'Produced by `npm run bench` (every suite; `npm run bench -- core` for one), which rewrites this file.',
  'Each suite measures Keel next to a baseline in the same run, so the ratios hold even when the',
  'absolute numbers move with the machine.',
  '',
  'Rows named `floor:` measure `bench/floor.ts`, a bare `node:http` server that does only the',
  'measured write: the request parsed and trusted, one SQLite transaction (a hash-chained event and',
  'one row), the answer. No framework, validation, access rules, machine, audit metadata or further',
  'read models. It is what this machine allows any Node process for that request, so a target above',
  "it cannot be met by doing Keel's work faster, only by not doing it.",
  '',
  `Machine: ${machine}. Run: ${new Date().toISOString()}.`,
  '',
  ...sections,
].join('\n');
if (only.length === 0)
  writeFileSync(join(import.meta.dirname, '..', 'docs', 'benchmarks.md'), `${doc}\n`);
else console.log(`\n${doc}`);
