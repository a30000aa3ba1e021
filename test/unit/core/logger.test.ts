import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, logProcessWarnings } from '../../../src/core/logger.js';

describe('process warnings', () => {
  it('become one JSON log line each, in place of the process’s own printer', async () => {
    const out = new PassThrough();
    const lines: string[] = [];
    out.on('data', (c: Buffer) => lines.push(...c.toString().split('\n').filter(Boolean)));
    const before = process.listeners('warning');
    const undo = logProcessWarnings(createLogger({ destination: out }));
    try {
      expect(process.listeners('warning')).toHaveLength(1);
      process.emitWarning('first line\nsecond line', 'NodeVersionSupportWarning');
      await new Promise((done) => setImmediate(done));
    } finally {
      undo();
    }
    expect(process.listeners('warning')).toEqual(before);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 40,
      msg: 'process warning',
      warning: { name: 'NodeVersionSupportWarning', message: 'first line\nsecond line' },
    });
  });
});
