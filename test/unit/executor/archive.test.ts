import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ArchiveError, safeEntryPath } from '../../../src/runs/configuration-versions/archive.js';
import {
  packDirectory,
  readConfigurationText,
  writeConfiguration,
} from '../../../src/runs/executor/archive.js';
import { tarball } from '../../support/configuration.js';

describe('configuration archives', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  it('reads the files of an upload keyed by their path under the root', async () => {
    const files = await readConfigurationText(tarball({ 'main.tf': 'a', 'modules/x/y.tf': 'b' }));
    expect([...files]).toEqual([
      ['main.tf', 'a'],
      ['modules/x/y.tf', 'b'],
    ]);
  });

  it('round-trips a directory packed with tar', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'keel-archive-'));
    dirs.push(dir);
    await mkdir(join(dir, 'sub'));
    await writeFile(join(dir, 'main.tf'), 'resource "x" "y" {}\n');
    await writeFile(join(dir, 'sub', 'vars.tf'), 'variable "v" {}\n');
    const files = await readConfigurationText(await packDirectory(dir));
    expect(Object.fromEntries(files)).toEqual({
      'main.tf': 'resource "x" "y" {}\n',
      'sub/vars.tf': 'variable "v" {}\n',
    });
    const out = await mkdtemp(join(tmpdir(), 'keel-archive-'));
    dirs.push(out);
    await writeConfiguration(files, out);
    expect(await readFile(join(out, 'sub', 'vars.tf'), 'utf8')).toBe('variable "v" {}\n');
  });

  it.each([
    ['a parent-directory path', { prefix: '../' }, 'points outside'],
    ['a nested parent-directory path', { prefix: './a/../../' }, 'points outside'],
    ['an absolute path', { prefix: '/tmp/' }, 'absolute path'],
    ['a backslash path', { prefix: '.\\..\\' }, 'backslash'],
  ])('refuses %s', async (_name, options, message) => {
    await expect(readConfigurationText(tarball({ 'evil.tf': 'x' }, options))).rejects.toThrow(
      message,
    );
  });

  it('refuses links, which could point anywhere once written', async () => {
    await expect(
      readConfigurationText(tarball({ 'link.tf': '' }, { type: 'SymbolicLink' })),
    ).rejects.toThrow('is a symbolic link');
  });

  it('refuses a body that is not a tar.gz', async () => {
    await expect(readConfigurationText(Buffer.from('not an archive'))).rejects.toBeInstanceOf(
      ArchiveError,
    );
  });

  it('normalises harmless paths and refuses escapes in safeEntryPath', () => {
    expect(safeEntryPath('./a//b.tf')).toBe('a/b.tf');
    expect(safeEntryPath('./')).toBe('');
    expect(() => safeEntryPath('a\\..\\..\\b')).toThrow(ArchiveError);
    expect(() => safeEntryPath('C:/x')).toThrow(ArchiveError);
  });
});
