import { once } from 'node:events';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar';
import { ValidationError } from '../../core/errors.js';

/**
 * The one check of a configuration archive, used when it is uploaded and again when a phase reads
 * it: a (gzipped) tar of regular files and directories that stays inside its root and within the
 * limits. The archive is expanded as a stream with running totals, so a bomb is refused at the
 * limit without anything past it being decompressed, let alone kept.
 */

/** The archive was refused: unreadable, too large, or holding an entry that is not allowed. */
export class ArchiveError extends ValidationError {
  constructor(message: string) {
    super(message, { title: 'invalid configuration archive' });
    this.name = 'ArchiveError';
  }
}

export interface ArchiveLimits {
  /** Upper bound on the expanded tar stream (headers, contents and padding). */
  readonly bytes: number;
  /** Upper bound on the number of entries (files and directories). */
  readonly entries: number;
}

export const ARCHIVE_LIMITS: ArchiveLimits = { bytes: 32 * 1024 * 1024, entries: 10_000 };

/** Compressed input is fed in slices this small, so one step expands to at most ~16 MiB. */
const SLICE = 16 * 1024;
/** Longest path segment and path a file system takes. */
const MAX_SEGMENT_BYTES = 255;
const MAX_PATH_BYTES = 4096;

const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/** What an entry of a refused type is, in words. */
function kindOf(type: string): string {
  switch (type) {
    case 'SymbolicLink':
      return 'a symbolic link';
    case 'Link':
      return 'a hard link';
    case 'CharacterDevice':
    case 'BlockDevice':
      return 'a device';
    case 'FIFO':
      return 'a named pipe';
    default:
      return `of type ${type}`;
  }
}

/**
 * The archive path as a clean relative path (`./a//b.tf` → `a/b.tf`, the root → `''`), or an
 * {@link ArchiveError}: absolute paths, drive letters, backslashes, NUL and `..` segments are
 * refused rather than rewritten, so a hostile upload errors instead of landing somewhere else.
 */
export function safeEntryPath(raw: string): string {
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw))
    throw new ArchiveError(`archive entry ${JSON.stringify(raw)} is an absolute path`);
  if (raw.includes('\\') || raw.includes('\0'))
    throw new ArchiveError(
      `archive entry ${JSON.stringify(raw)} has a backslash or NUL in its path`,
    );
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (segments.includes('..'))
    throw new ArchiveError(
      `archive entry ${JSON.stringify(raw)} points outside the configuration directory`,
    );
  const clean = segments.join('/');
  if (
    Buffer.byteLength(clean) > MAX_PATH_BYTES ||
    segments.some((s) => Buffer.byteLength(s) > MAX_SEGMENT_BYTES)
  )
    throw new ArchiveError(`archive entry ${JSON.stringify(raw)} has too long a path`);
  return clean;
}

/** The tree so far: a path may be a file or a directory, never both, and a file only once. */
class Tree {
  readonly files = new Set<string>();
  readonly dirs = new Set<string>();

  add(path: string, raw: string, isFile: boolean): void {
    const segments = path.split('/');
    for (let i = 1; i < segments.length; i++) {
      const parent = segments.slice(0, i).join('/');
      if (this.files.has(parent))
        throw new ArchiveError(`archive entry ${JSON.stringify(raw)} is inside a file`);
      this.dirs.add(parent);
    }
    if (this.files.has(path))
      throw new ArchiveError(`archive entry ${JSON.stringify(raw)} appears twice`);
    if (isFile && this.dirs.has(path))
      throw new ArchiveError(`archive entry ${JSON.stringify(raw)} is both a file and a directory`);
    (isFile ? this.files : this.dirs).add(path);
  }
}

/** A vetted archive: its regular files by clean path (contents only when asked to keep them). */
export interface Configuration {
  readonly paths: readonly string[];
  readonly files: ReadonlyMap<string, Buffer>;
}

/** The compressed bytes to read: a whole upload, or any stream of chunks. */
export type ArchiveSource = Buffer | AsyncIterable<Buffer>;

async function* slices(source: ArchiveSource): AsyncGenerator<Buffer> {
  const chunks = Buffer.isBuffer(source) ? [source] : source;
  for await (const chunk of chunks)
    for (let at = 0; at < chunk.length; at += SLICE) yield chunk.subarray(at, at + SLICE);
}

/** The expanded tar stream: gunzipped when it starts with the gzip magic bytes. */
async function* expanded(source: ArchiveSource): AsyncGenerator<Buffer> {
  const input = slices(source);
  const first = await input.next();
  if (first.done === true) return;
  const rest = async function* () {
    yield first.value;
    yield* input;
  };
  if (first.value[0] !== 0x1f || first.value[1] !== 0x8b) {
    yield* rest();
    return;
  }
  const gunzip = createGunzip();
  const feed = Readable.from(rest());
  feed.pipe(gunzip);
  feed.on('error', (error) => gunzip.destroy(error));
  try {
    for await (const chunk of gunzip) yield chunk as Buffer;
  } finally {
    feed.destroy();
    gunzip.destroy();
  }
}

/**
 * Reads and checks a configuration archive. `keep` keeps the files' contents (the executor);
 * without it only their paths are listed (the upload). Throws {@link ArchiveError}.
 */
export async function readArchive(
  source: ArchiveSource,
  options: { keep: boolean; limits?: ArchiveLimits },
): Promise<Configuration> {
  const limits = options.limits ?? ARCHIVE_LIMITS;
  const tree = new Tree();
  const files = new Map<string, Buffer>();
  /** Expanded bytes read so far, and the bytes the entries' headers account for. */
  let total = 0;
  let declared = 0;
  let entries = 0;
  let failure: Error | null = null;
  const fail = (error: unknown) => {
    failure ??=
      error instanceof ArchiveError
        ? error
        : new ArchiveError(
            `the upload is not a valid .tar.gz archive (${error instanceof Error ? error.message : String(error)})`,
          );
  };
  const tooLarge = () =>
    new ArchiveError(`the configuration expands to more than ${limits.bytes} bytes`);
  const parser = new tar.Parser({
    strict: true,
    zstd: false,
    brotli: false,
    onwarn: (code: string, message: string | Error) =>
      fail(new Error(`${code}: ${String(message)}`)),
    onReadEntry(entry) {
      try {
        entries += 1;
        if (entries > limits.entries)
          throw new ArchiveError(`the archive has more than ${limits.entries} entries`);
        const isFile = FILE_TYPES.has(entry.type);
        if (!isFile && entry.type !== 'Directory')
          throw new ArchiveError(
            `archive entry ${JSON.stringify(entry.path)} is ${kindOf(entry.type)}; only files and directories are allowed`,
          );
        const path = safeEntryPath(entry.path);
        if (path === '') {
          if (isFile) throw new ArchiveError('an archive file entry has an empty path');
          entry.resume();
          return;
        }
        tree.add(path, entry.path, isFile);
        // The headers so far already promise more than the limit: refuse before expanding it.
        declared += 512 + 512 * Math.ceil(entry.size / 512);
        if (declared > limits.bytes) throw tooLarge();
        if (!isFile) {
          entry.resume();
          return;
        }
        const chunks: Buffer[] = [];
        if (options.keep) entry.on('data', (chunk: Buffer) => chunks.push(chunk));
        else entry.resume();
        entry.on('end', () => {
          if (options.keep) files.set(path, Buffer.concat(chunks));
        });
      } catch (error) {
        fail(error);
        entry.resume();
      }
    },
  });
  parser.on('error', fail);
  parser.on('ignoredEntry', (entry: tar.ReadEntry) =>
    fail(new ArchiveError(`archive entry ${JSON.stringify(entry.path)} has an unknown type`)),
  );
  // The parser would expand a compressed stream itself, past these totals: it only ever sees tar.
  let head: Buffer | null = Buffer.alloc(0);
  try {
    for await (const chunk of expanded(source)) {
      total += chunk.length;
      if (total > limits.bytes) fail(tooLarge());
      if (failure !== null) break;
      let next = chunk;
      if (head !== null) {
        head = Buffer.concat([head, chunk]);
        if (head.length < 2) continue;
        if (head[0] === 0x1f && head[1] === 0x8b)
          throw new ArchiveError('the archive is compressed more than once');
        next = head;
        head = null;
      }
      const flowing = parser.write(next);
      // A refusal while writing ends the read at once: a refused parser may never drain.
      if (failure !== null) break;
      if (!flowing) await once(parser, 'drain');
    }
    if (failure === null) {
      const ended = once(parser, 'end');
      if (head !== null && head.length > 0) parser.end(head);
      else parser.end();
      await ended;
    }
  } catch (error) {
    fail(error);
  }
  if (failure !== null) throw failure as Error;
  return { paths: [...tree.files].sort(), files };
}
