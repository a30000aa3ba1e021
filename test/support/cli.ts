import { PassThrough } from 'node:stream';
import { runCli } from '../../src/cli.js';

/** `keel <args>` run in process: its exit status and what it printed on each stream. */
export async function keel(args: string[], env: NodeJS.ProcessEnv = {}) {
  const out = new PassThrough();
  const err = new PassThrough();
  const chunks = { out: [] as string[], err: [] as string[] };
  out.on('data', (c: Buffer) => chunks.out.push(c.toString()));
  err.on('data', (c: Buffer) => chunks.err.push(c.toString()));
  const status = await runCli(args, { env, stdout: out, stderr: err });
  return { status, stdout: chunks.out.join(''), stderr: chunks.err.join('') };
}
