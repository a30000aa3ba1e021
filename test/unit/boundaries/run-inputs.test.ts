import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../../src/runs/executor/builtin/config.js';
import { fileVariables } from '../../../src/runs/executor/builtin/variables.js';
import { planArguments } from '../../../src/runs/executor/command/index.js';
import { defaultFlags } from '../../../src/runs/executor/types.js';

async function refusal(files: Map<string, string>): Promise<ConfigurationError> {
  const error = await fileVariables(files).then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ConfigurationError);
  return error as ConfigurationError;
}

/** JSON a configuration brings, parsed with a schema: what does not fit is named, not cast. */
describe('a *.tfvars.json file', () => {
  it.each([
    ['a list', '["a"]'],
    ['a string', '"a"'],
    ['null', 'null'],
  ])('that is %s is an invalid variable definitions file, named', async (_, text) => {
    const files = new Map([['terraform.tfvars.json', text]]);
    const error = await refusal(files);
    expect(error.summary).toBe('Invalid variable definitions file');
    expect(error.detail).toMatch(/^terraform\.tfvars\.json: the document: .*expected record/);
  });

  it('that is not JSON says so', async () => {
    const files = new Map([['x.auto.tfvars.json', '{"a":']]);
    expect((await refusal(files)).detail).toMatch(/^x\.auto\.tfvars\.json: not JSON: /);
  });

  it('takes any JSON values, nested ones too', async () => {
    const files = new Map([['terraform.tfvars.json', '{"a":{"b":[1,null,"c"]},"d":true}']]);
    expect(Object.fromEntries(await fileVariables(files))).toEqual({
      a: { b: [1, null, 'c'] },
      d: true,
    });
  });
});

describe('a run variable passed to the binary', () => {
  it('loses the quotes of a JSON string literal and keeps anything else as written', () => {
    const args = planArguments(defaultFlags, [
      { key: 's', value: '"a \\"b\\""' },
      { key: 'n', value: '3' },
      { key: 'l', value: '["x"]' },
    ]);
    expect(args.filter((_, i) => args[i - 1] === '-var')).toEqual(['s=a "b"', 'n=3', 'l=["x"]']);
  });
});
