import { posix } from 'node:path';
import * as tar from 'tar';
import { ValidationError } from '../../core/errors.js';

/**
 * Check an uploaded configuration archive without extracting it: it must be a (gzipped) tar whose
 * every entry stays inside the configuration directory. Returns the file paths, normalised.
 */
export function inspectArchive(archive: Buffer): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const files: string[] = [];
    let failed = false;
    const fail = (message: string) => {
      if (!failed) reject(new ValidationError(message, { title: 'invalid configuration archive' }));
      failed = true;
    };
    const inside = (path: string) => {
      const normal = posix.normalize(path);
      return !posix.isAbsolute(path) && normal !== '..' && !normal.startsWith('../');
    };
    const parser = new tar.Parser({
      strict: true,
      onwarn: (code: string, message: string | Error) =>
        fail(`the upload is not a valid .tar.gz archive (${code}: ${String(message)})`),
      onReadEntry(entry) {
        if (!inside(entry.path))
          fail(
            `archive entry ${JSON.stringify(entry.path)} points outside the configuration directory`,
          );
        else if (
          entry.linkpath !== undefined &&
          entry.linkpath !== '' &&
          !inside(posix.join(posix.dirname(entry.path), entry.linkpath))
        ) {
          fail(
            `archive link ${JSON.stringify(entry.path)} points outside the configuration directory`,
          );
        } else if (entry.type === 'File' || entry.type === 'OldFile')
          files.push(posix.normalize(entry.path));
        entry.resume();
      },
    });
    parser.on('error', (err: Error) =>
      fail(`the upload is not a valid .tar.gz archive (${err.message})`),
    );
    parser.on('end', () => {
      if (!failed) resolve(files.sort());
    });
    parser.end(archive);
  });
}
