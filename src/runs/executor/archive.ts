import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, posix } from 'node:path';
import * as tar from 'tar';
import type { ConfigFiles } from './types.js';

/** The uploaded archive was refused: unreadable, too large, or naming a path outside its root. */
export class ArchiveError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArchiveError';
  }
}

/** Upper bound on the unpacked size of one configuration version. */
export const MAX_CONFIGURATION_BYTES = 32 * 1024 * 1024;

/**
 * The archive path as a clean relative path, or an error when it would land outside the root:
 * absolute paths, drive letters and `..` segments are refused rather than rewritten, so a
 * malicious upload errors instead of half-extracting.
 */
export function safeEntryPath(raw: string): string {
  const path = raw.replace(/\\/g, '/');
  if (path.startsWith('/') || /^[A-Za-z]:/.test(path)) {
    throw new ArchiveError(`archive entry "${raw}" is an absolute path`);
  }
  if (path.split('/').includes('..')) {
    throw new ArchiveError(`archive entry "${raw}" points outside the configuration directory`);
  }
  const clean = posix.normalize(path).replace(/^(\.\/)+/, '');
  return clean === '.' ? '' : clean.replace(/\/$/, '');
}

/**
 * Reads a `.tar.gz` configuration archive into memory: regular files only, keyed by their path
 * relative to the archive root (`./main.tf` becomes `main.tf`). Links are refused because they
 * could point anywhere once written to disk.
 */
export async function readConfiguration(archive: Buffer): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  const problem: { failure: Error | null } = { failure: null };
  let total = 0;
  const parser = new tar.Parser({
    strict: true,
    onReadEntry: (entry) => {
      try {
        const path = safeEntryPath(entry.path);
        if (entry.type === 'SymbolicLink' || entry.type === 'Link') {
          throw new ArchiveError(`archive entry "${entry.path}" is a link`);
        }
        if (entry.type !== 'File' && entry.type !== 'OldFile' && entry.type !== 'ContiguousFile') {
          entry.resume();
          return;
        }
        const chunks: Buffer[] = [];
        entry.on('data', (chunk: Buffer) => {
          total += chunk.length;
          if (total > MAX_CONFIGURATION_BYTES) {
            problem.failure ??= new ArchiveError(
              `configuration is larger than ${MAX_CONFIGURATION_BYTES} bytes`,
            );
          }
          chunks.push(chunk);
        });
        entry.on('end', () => files.set(path, Buffer.concat(chunks)));
      } catch (error) {
        problem.failure ??= error as Error;
        entry.resume();
      }
    },
  });
  await new Promise<void>((resolve, reject) => {
    parser.on('error', (error: Error) =>
      reject(new ArchiveError(`unreadable archive: ${error.message}`)),
    );
    parser.on('end', () => resolve());
    parser.end(archive);
  });
  if (problem.failure) throw problem.failure;
  return files;
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
