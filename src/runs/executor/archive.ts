import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import * as tar from 'tar';
import { readArchive, safeEntryPath } from '../configuration-versions/archive.js';
import type { ConfigFiles } from './types.js';

/**
 * Reads a configuration archive into memory through the one archive check (the same as at upload):
 * regular files only, keyed by their path relative to the archive root (`./main.tf` becomes
 * `main.tf`).
 */
export async function readConfiguration(archive: Buffer): Promise<Map<string, Buffer>> {
  return new Map((await readArchive(archive, { keep: true })).files);
}

/** The text files of an archive: what the builtin driver reads. */
export async function readConfigurationText(archive: Buffer): Promise<ConfigFiles> {
  const files = await readConfiguration(archive);
  return new Map([...files].map(([path, data]) => [path, data.toString('utf8')]));
}

/** Writes files (already vetted by {@link readConfiguration}) under `dir`. */
export async function writeConfiguration(
  files: ReadonlyMap<string, Buffer | string>,
  dir: string,
): Promise<void> {
  for (const [path, data] of files) {
    const target = join(dir, safeEntryPath(path));
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, data);
  }
}

/** Packs a directory into a `.tar.gz` whose root is the directory (`./main.tf`), as clients upload. */
export async function packDirectory(dir: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const stream = tar.c({ gzip: true, cwd: dir, portable: true }, ['.']);
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}
