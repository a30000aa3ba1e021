import { getDefaultHighWaterMark } from 'node:stream';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  ArchiveError,
  readArchive,
  safeEntryPath,
  type ArchiveLimits,
} from '../../../src/runs/configuration-versions/archive.js';
import { bomb, endlessBomb, rawTarball, type RawEntry } from '../../support/configuration.js';

/** The one archive check, at upload and at execution. */

const MIB = 1024 * 1024;
const small: ArchiveLimits = { bytes: 4 * MIB, entries: 50 };
const body = (text: string) => Buffer.from(text);

const refusal = async (archive: Buffer, limits?: ArchiveLimits) => {
  const error = await readArchive(archive, { keep: true, ...(limits ? { limits } : {}) }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ArchiveError);
  return (error as ArchiveError).message;
};

describe('readArchive', () => {
  it('lists files by clean path and keeps their contents only when asked', async () => {
    const archive = rawTarball([
      { path: './', type: 'Directory' },
      { path: './mod/', type: 'Directory' },
      { path: './mod//b.tf', body: body('b') },
      { path: 'a.tf', body: body('a') },
    ]);
    const kept = await readArchive(archive, { keep: true });
    expect(kept.paths).toEqual(['a.tf', 'mod/b.tf']);
    expect(Object.fromEntries([...kept.files].map(([k, v]) => [k, v.toString()]))).toEqual({
      'a.tf': 'a',
      'mod/b.tf': 'b',
    });
    const listed = await readArchive(archive, { keep: false });
    expect(listed.paths).toEqual(['a.tf', 'mod/b.tf']);
    expect(listed.files.size).toBe(0);
  });

  it.each<[string, RawEntry, RegExp]>([
    [
      'a symbolic link',
      { path: './passwd.tf', type: 'SymbolicLink', linkpath: '/etc/passwd' },
      /is a symbolic link/,
    ],
    [
      'a link inside the root',
      { path: './b.tf', type: 'SymbolicLink', linkpath: 'a.tf' },
      /is a symbolic link/,
    ],
    [
      'a hard link',
      { path: './passwd.tf', type: 'Link', linkpath: '/etc/passwd' },
      /is a hard link/,
    ],
    ['a character device', { path: './tty', type: 'CharacterDevice' }, /is a device/],
    ['a block device', { path: './sda', type: 'BlockDevice' }, /is a device/],
    ['a named pipe', { path: './pipe', type: 'FIFO' }, /is a named pipe/],
    [
      'a parent path',
      { path: '../evil.tf', body: body('x') },
      /outside the configuration directory/,
    ],
    ['a nested parent path', { path: './a/../../evil.tf', body: body('x') }, /outside/],
    ['an absolute path', { path: '/etc/cron.d/evil', body: body('x') }, /absolute path/],
    ['a drive letter', { path: 'C:/evil.tf', body: body('x') }, /absolute path/],
    ['a backslash', { path: '..\\evil.tf', body: body('x') }, /backslash/],
  ])('refuses %s', async (_name, entry, message) => {
    expect(await refusal(rawTarball([{ path: './a.tf', body: body('a') }, entry]))).toMatch(
      message,
    );
  });

  it('cleans paths and refuses names a file system cannot take', () => {
    expect(safeEntryPath('./a//./b.tf')).toBe('a/b.tf');
    expect(safeEntryPath('./')).toBe('');
    expect(() => safeEntryPath(`${'n'.repeat(256)}.tf`)).toThrow(/too long/);
    expect(() => safeEntryPath(`${'d/'.repeat(2100)}x.tf`)).toThrow(/too long/);
    expect(() => safeEntryPath('a\0b')).toThrow(/NUL/);
  });

  it('refuses a file given twice, a file used as a directory, and a directory given as a file', async () => {
    const twice = rawTarball([
      { path: 'a.tf', body: body('1') },
      { path: './a.tf', body: body('2') },
    ]);
    expect(await refusal(twice)).toMatch(/appears twice/);
    const under = rawTarball([
      { path: 'a', body: body('1') },
      { path: 'a/b.tf', body: body('2') },
    ]);
    expect(await refusal(under)).toMatch(/inside a file/);
    const both = rawTarball([
      { path: 'a/b.tf', body: body('1') },
      { path: 'a', body: body('2') },
    ]);
    expect(await refusal(both)).toMatch(/both a file and a directory/);
  });

  it('refuses more entries than the limit', async () => {
    const many = Array.from({ length: 51 }, (_, i) => ({ path: `f${i}.tf`, body: body('x') }));
    expect(await refusal(rawTarball(many), small)).toMatch(/more than 50 entries/);
    await expect(
      readArchive(rawTarball(many.slice(0, 50)), { keep: false, limits: small }),
    ).resolves.toBeDefined();
  });

  it('refuses an archive compressed twice, which the tar parser would otherwise expand itself', async () => {
    const inner = rawTarball([{ path: 'a.tf', body: body('a') }]);
    expect(await refusal(gzipSync(inner))).toMatch(/compressed more than once/);
  });

  it('refuses a body that is no archive at all', async () => {
    expect(await refusal(Buffer.from('not an archive'))).toMatch(/not a valid \.tar\.gz/);
  });

  it('refuses a file whose header declares more than the limit, before expanding its contents', async () => {
    const archive = bomb(2048 * MIB, 'declared');
    expect(archive.length).toBeLessThan(3 * MIB);
    const started = process.memoryUsage().arrayBuffers;
    expect(await refusal(archive)).toMatch(/expands to more than 33554432 bytes/);
    expect(process.memoryUsage().arrayBuffers - started).toBeLessThan(64 * MIB);
  });

  it('stops reading an endless bomb at the limit: nothing past it is decompressed', async () => {
    const endless = endlessBomb();
    const error = await readArchive(endless.source, { keep: true, limits: small }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ArchiveError);
    expect((error as Error).message).toMatch(/expands to more than 4194304 bytes/);
    // each MiB file is ~1 KiB compressed: a few files past the limit at most were pulled, plus
    // what the gunzip stream buffers ahead (its high-water mark: 16 KiB on Node 20, 64 on 22+)
    const perFile = gzipSync(Buffer.alloc(MIB)).length;
    expect(endless.consumed()).toBeLessThan(perFile * 40 + getDefaultHighWaterMark(false));
    expect(endless.consumed()).toBeGreaterThan(perFile * 3);
  });

  it('accepts an archive exactly at the limit and refuses one just past it', async () => {
    const limits = { bytes: 3 * MIB, entries: 10 };
    // two files of one MiB: 2 MiB of contents, 1 KiB of headers and 1 KiB of end blocks
    const two = rawTarball([
      { path: 'a.tf', body: Buffer.alloc(MIB) },
      { path: 'b.tf', body: Buffer.alloc(MIB) },
    ]);
    await expect(readArchive(two, { keep: true, limits })).resolves.toMatchObject({
      paths: ['a.tf', 'b.tf'],
    });
    expect(await refusal(bomb(3 * MIB, 'spread'), limits)).toMatch(/expands to more than/);
  });
});
