import { gzipSync } from 'node:zlib';
import { Header } from 'tar';

/**
 * A `.tar.gz` holding the given files under `./`, as clients upload configuration versions.
 * Paths are written exactly as given, so tests can also build hostile archives.
 */
export function tarball(
  files: Record<string, string>,
  options: { prefix?: string; type?: 'File' | 'SymbolicLink' } = {},
): Buffer {
  const blocks: Buffer[] = [];
  for (const [path, text] of Object.entries(files)) {
    const body = Buffer.from(text, 'utf8');
    const header = Buffer.alloc(512);
    new Header({
      path: `${options.prefix ?? './'}${path}`,
      mode: 0o644,
      size: options.type === 'SymbolicLink' ? 0 : body.length,
      mtime: new Date(0),
      type: options.type ?? 'File',
      ...(options.type === 'SymbolicLink' ? { linkpath: '/etc/passwd' } : {}),
      uid: 0,
      gid: 0,
    }).encode(header, 0);
    blocks.push(header);
    if (options.type !== 'SymbolicLink') {
      blocks.push(body, Buffer.alloc((512 - (body.length % 512)) % 512));
    }
  }
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks));
}
