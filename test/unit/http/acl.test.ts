import { describe, expect, it } from 'vitest';
import {
  capabilitiesFor,
  compiledPatterns,
  parsePolicy,
  pathMatches,
} from '../../../src/secrets/sys/acl.js';

describe('ACL policies', () => {
  it('parses the reference HCL syntax and JSON alike', async () => {
    const hcl = await parsePolicy('p', 'path "pki/*" {\n  capabilities = ["read", "list"]\n}\n');
    const json = await parsePolicy('p', '{"path": {"pki/*": {"capabilities": ["read", "list"]}}}');
    expect(hcl).toEqual([{ path: 'pki/*', capabilities: ['list', 'read'] }]);
    expect(json).toEqual(hcl);
  });

  it('rejects syntax errors and unknown capabilities with the parser diagnostic', async () => {
    await expect(parsePolicy('p', 'path "x" { capabilities = [')).rejects.toThrow(
      /failed to parse policy: .*p\.hcl/,
    );
    await expect(parsePolicy('p', 'path "x" { capabilities = ["fly"] }')).rejects.toThrow(
      /invalid capability "fly"/,
    );
    await expect(parsePolicy('p', 'path "x" { }')).rejects.toThrow(/no capabilities/);
  });

  it.each([
    ['pki/roles/web', ['list', 'read']],
    ['pki/issue/web', ['update']],
    ['pki/issue/web/extra', ['list', 'read']],
    ['pki/secret', []],
    ['aws/creds/x', ['read']],
    ['aws/creds', []],
    ['sys/mounts', []],
  ])('%s → %j', async (path, caps) => {
    const a = await parsePolicy(
      'a',
      'path "pki/*" { capabilities = ["read","list"] }\npath "pki/secret" { capabilities = ["deny","read"] }',
    );
    const b = await parsePolicy(
      'b',
      'path "pki/issue/+" { capabilities = ["update"] }\npath "aws/creds/*" { capabilities = ["read"] }',
    );
    expect([...capabilitiesFor([a, b], path)].sort()).toEqual(caps);
  });

  it('merges the same pattern across policies; deny wins', async () => {
    const a = await parsePolicy('a', 'path "x/*" { capabilities = ["read"] }');
    const b = await parsePolicy('b', 'path "x/*" { capabilities = ["list"] }');
    const c = await parsePolicy('c', 'path "x/*" { capabilities = ["deny"] }');
    expect([...capabilitiesFor([a, b], 'x/y')].sort()).toEqual(['list', 'read']);
    expect([...capabilitiesFor([a, b, c], 'x/y')]).toEqual([]);
  });

  it('prefers the more specific pattern', async () => {
    const p = await parsePolicy(
      'p',
      'path "x/*" { capabilities = ["read"] }\npath "x/y/*" { capabilities = ["list"] }\npath "x/y/z" { capabilities = ["delete"] }',
    );
    expect([...capabilitiesFor([p], 'x/y/q')]).toEqual(['list']);
    expect([...capabilitiesFor([p], 'x/y/z')]).toEqual(['delete']);
    expect([...capabilitiesFor([p], 'x/a')]).toEqual(['read']);
  });
});

describe('the compiled pattern cache', () => {
  it('stays within its bound however many patterns are matched', () => {
    const misses: number[] = [];
    for (let i = 0; i < compiledPatterns.capacity + 100; i++)
      if (!pathMatches(`p${i}/+/*`, `p${i}/a/b`)) misses.push(i);
    expect(misses).toEqual([]);
    expect(compiledPatterns.size).toBe(compiledPatterns.capacity);
    // a pattern pushed out is compiled again and still matches
    expect(pathMatches('p0/+/*', 'p0/a/b')).toBe(true);
    expect(pathMatches('p0/+/*', 'p1/a/b')).toBe(false);
  });
});
