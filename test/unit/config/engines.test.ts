import { describe, expect, it } from 'vitest';
import { ConfigError, enginesOf, loadConfig } from '../../../src/config.js';

const problemsOf = (env: NodeJS.ProcessEnv): string[] => {
  try {
    loadConfig({}, env);
  } catch (e) {
    if (e instanceof ConfigError) return e.problems;
    throw e;
  }
  return [];
};

describe('KEEL_ENGINES', () => {
  it('names binaries; KEEL_ENGINE_BIN is the engine named default', () => {
    const c = loadConfig(
      {},
      { KEEL_ENGINES: 'tf=/usr/bin/terraform, tofu-1_8=/opt/tofu', KEEL_ENGINE_BIN: '/opt/tf' },
    );
    expect(c.engines).toEqual({ tf: '/usr/bin/terraform', 'tofu-1_8': '/opt/tofu' });
    expect(enginesOf(c)).toEqual({
      tf: '/usr/bin/terraform',
      'tofu-1_8': '/opt/tofu',
      default: '/opt/tf',
    });
  });

  it('is empty by default; the --engines flag wins over the environment', () => {
    expect(enginesOf(loadConfig({}, {}))).toEqual({});
    expect(loadConfig({ engines: 'a=/bin/a' }, { KEEL_ENGINES: 'b=/bin/b' }).engines).toEqual({
      a: '/bin/a',
    });
  });

  it('reports every bad entry at once', () => {
    const problems = problemsOf({
      KEEL_ENGINES: 'Upper=/x,builtin=/x,rel=bin/tf,nopath,dup=/a,dup=/b,default=/c',
      KEEL_ENGINE_BIN: '/opt/tf',
      KEEL_LISTEN: 'nope',
    });
    expect(problems).toHaveLength(7);
    expect(problems.join('\n')).toMatch(/"Upper=\/x".*lowercase/);
    expect(problems.join('\n')).toMatch(/"builtin=\/x".*built-in driver/);
    expect(problems.join('\n')).toMatch(/"rel=bin\/tf".*absolute path/);
    expect(problems.join('\n')).toMatch(/"nopath".*absolute path/);
    expect(problems.join('\n')).toMatch(/"dup=\/b".*named twice/);
    expect(problems.join('\n')).toMatch(/cannot name "default" when KEEL_ENGINE_BIN is set/);
    expect(problems.join('\n')).toMatch(/KEEL_LISTEN/);
  });
});
