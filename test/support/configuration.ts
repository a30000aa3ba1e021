import { gzipSync } from 'node:zlib';
import { Header } from 'tar';

/** One raw tar entry, written exactly as given (tar itself refuses to write hostile paths). */
export interface RawEntry {
  path: string;
  type?:
    'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'CharacterDevice' | 'BlockDevice' | 'FIFO';
  body?: Buffer;
  linkpath?: string;
  /** The size the header declares, when it must differ from the body's. */
  size?: number;
}

/** The 512-byte blocks of one entry: header, contents, padding. */
export function tarEntry(entry: RawEntry): Buffer {
  const body = entry.body ?? Buffer.alloc(0);
  const header = Buffer.alloc(512);
  new Header({
    path: entry.path,
    mode: entry.type === 'Directory' ? 0o755 : 0o644,
    size: entry.size ?? body.length,
    mtime: new Date(0),
    type: entry.type ?? 'File',
    ...(entry.linkpath !== undefined ? { linkpath: entry.linkpath } : {}),
    uid: 0,
    gid: 0,
  }).encode(header, 0);
  return Buffer.concat([header, body, Buffer.alloc((512 - (body.length % 512)) % 512)]);
}

/** A `.tar.gz` of raw entries and the end-of-archive blocks. */
export function rawTarball(entries: readonly RawEntry[]): Buffer {
  return gzipSync(Buffer.concat([...entries.map(tarEntry), Buffer.alloc(1024)]));
}

/**
 * A `.tar.gz` holding the given files under `./`, as clients upload configuration versions.
 * Paths are written exactly as given, so tests can also build hostile archives.
 */
export function tarball(
  files: Record<string, string>,
  options: { prefix?: string; type?: 'File' | 'SymbolicLink' } = {},
): Buffer {
  return rawTarball(
    Object.entries(files).map(([path, text]) =>
      options.type === 'SymbolicLink'
        ? {
            path: `${options.prefix ?? './'}${path}`,
            type: 'SymbolicLink',
            linkpath: '/etc/passwd',
          }
        : { path: `${options.prefix ?? './'}${path}`, body: Buffer.from(text, 'utf8') },
    ),
  );
}

/**
 * An endless archive bomb, as gzip members (which concatenate): files of `fileBytes` zeros each,
 * about a kilobyte compressed per MiB. `consumed` counts the compressed bytes taken so far.
 */
export function endlessBomb(fileBytes = 1024 * 1024): {
  source: AsyncIterable<Buffer>;
  consumed: () => number;
} {
  let consumed = 0;
  const member = (i: number) =>
    gzipSync(tarEntry({ path: `./bomb-${i}.tf`, body: Buffer.alloc(fileBytes) }));
  return {
    source: (async function* () {
      for (let i = 0; ; i++) {
        const chunk = member(i);
        consumed += chunk.length;
        yield chunk;
      }
    })(),
    consumed: () => consumed,
  };
}

const MIB = 1024 * 1024;
const zeroMib = gzipSync(Buffer.alloc(MIB), { level: 9 });

/**
 * Finite bombs of `totalBytes` expanded, built from repeated gzip members (so building one costs
 * little): `declared`, one file whose header declares it all; `spread`, files of one MiB each.
 */
export function bomb(totalBytes: number, shape: 'declared' | 'spread'): Buffer {
  const members: Buffer[] = [];
  if (shape === 'declared')
    members.push(gzipSync(tarEntry({ path: './passwords.tf', size: totalBytes }).subarray(0, 512)));
  for (let at = 0, i = 0; at < totalBytes; at += MIB, i++) {
    if (shape === 'spread')
      members.push(gzipSync(tarEntry({ path: `./f${i}.tf`, size: MIB }).subarray(0, 512)));
    members.push(zeroMib);
  }
  return Buffer.concat(members);
}
