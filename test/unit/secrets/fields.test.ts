import { describe, expect, it } from 'vitest';
import {
  convertField,
  declarePath,
  field,
  parseFields,
  type FieldType,
} from '../../../src/secrets/fields.js';

/**
 * The reference's field conversions, one row per case, written from its documented framework rules
 * (weak decoding, `strconv.ParseBool`, `ParseInt(s, 0, 64)`, `ParseDurationSecond`,
 * `ParseCommaStringSlice`, key pairs as a map or `k=v` strings).
 */
const ok: readonly [FieldType, unknown, unknown][] = [
  ['bool', true, true],
  ['bool', false, false],
  ['bool', 1, true],
  ['bool', 0, false],
  ['bool', 'true', true],
  ['bool', 'True', true],
  ['bool', 'TRUE', true],
  ['bool', 't', true],
  ['bool', 'T', true],
  ['bool', '1', true],
  ['bool', 'false', false],
  ['bool', 'F', false],
  ['bool', '0', false],
  ['bool', '', false],
  ['int', 42, 42],
  ['int', '42', 42],
  ['int', '-7', -7],
  ['int', '+7', 7],
  ['int', '0x1f', 31],
  ['int', '0o17', 15],
  ['int', '017', 15],
  ['int', '0b101', 5],
  ['int', '1_000', 1000],
  ['int', '', 0],
  ['int', true, 1],
  ['string', 'x', 'x'],
  ['string', 12, '12'],
  ['string', 1.5, '1.5'],
  ['string', true, '1'],
  ['string', false, '0'],
  ['lowercase-string', 'RSA', 'rsa'],
  ['name', 'web-1.a_b', 'web-1.a_b'],
  ['duration', 90, 90],
  ['duration', '90', 90],
  ['duration', '90s', 90],
  ['duration', '1h30m', 5400],
  ['duration', '1.5h', 5400],
  ['duration', '7d', 604800],
  ['duration', '', 0],
  ['signed-duration', '-5s', -5],
  ['comma-string-slice', 'a, b,,c ', ['a', 'b', 'c']],
  ['comma-string-slice', ['a', ' b', ''], ['a', 'b', '']],
  ['comma-string-slice', '', []],
  ['comma-string-slice', 5, ['5']],
  ['string-slice', 'a,b', ['a,b']],
  ['string-slice', [' a ', 'b'], ['a', 'b']],
  ['string-slice', '', []],
  ['kv-pairs', { a: 'b', n: 1 }, { a: 'b', n: '1' }],
  ['kv-pairs', ['a=b', 'c=d=e'], { a: 'b', c: 'd=e' }],
  ['kv-pairs', 'a=b,c', { a: 'b,c' }],
  ['map', { a: [1] }, { a: [1] }],
  ['map', [], {}],
];

const bad: readonly [FieldType, unknown, string][] = [
  ['bool', 2, `cannot parse 'f' as bool: "2"`],
  ['bool', 'yes', `cannot parse 'f' as bool: "yes"`],
  ['bool', ' true', `cannot parse 'f' as bool: " true"`],
  ['bool', 'tRuE', `cannot parse 'f' as bool: "tRuE"`],
  ['bool', [], `'f' expected type 'bool', got unconvertible type 'slice'`],
  ['int', 1.5, `cannot parse 'f' as int: 1.5`],
  ['int', '1.5', `cannot parse 'f' as int: "1.5"`],
  ['int', 'ten', `cannot parse 'f' as int: "ten"`],
  ['int', '09', `cannot parse 'f' as int: "09"`],
  ['int', '1__0', `cannot parse 'f' as int: "1__0"`],
  ['string', ['a'], `'f' expected type 'string', got unconvertible type 'slice'`],
  ['string', { a: 1 }, `'f' expected type 'string', got unconvertible type 'map'`],
  ['name', '-web', 'field does not match the formatting rules'],
  ['duration', 'soon', 'time: invalid duration "soon"'],
  ['duration', '-5s', "cannot provide negative value '-5'"],
  ['duration', true, 'could not parse duration from input'],
  ['comma-string-slice', { a: 1 }, `'f' expected a comma-separated string or a list of strings`],
  ['comma-string-slice', [{}], `'f' expected a list of strings, got 'map' in it`],
  ['kv-pairs', ['nokey'], 'invalid key pair "nokey"'],
  ['kv-pairs', ['=v'], 'invalid key pair "=v"'],
  ['map', 'a=b', `'f' expected a map, got unconvertible type 'string'`],
];

describe('field conversions', () => {
  it.each(ok)('%s from %j is %j', (type, input, expected) => {
    expect(convertField(type, 'f', input)).toEqual(expected);
  });
  it.each(bad)('%s from %j is refused: %s', (type, input, why) => {
    expect(() => convertField(type, 'f', input)).toThrow(
      `Field validation failed: error converting input for field "f": ${why}`,
    );
  });
  it('never echoes a string value that fails a string field', () => {
    expect(() => convertField('string', 'secret_key', ['hunter2'])).toThrow(/^(?!.*hunter2).*$/s);
  });
});

describe('declared paths', () => {
  const path = declarePath({
    pattern: 'roles/:name',
    summary: 'A role',
    operations: ['read', 'update'],
    fields: {
      name: field.name('Name of the role', { required: true }),
      ttl: field.duration('Lease TTL'),
      enabled: field.bool('Whether the role issues', { default: true }),
      domains: field.commaSlice('Allowed domains', { default: [] }),
      kind: field.string('Kind', { allowed: ['a', 'b'] }),
    },
  });

  it('converts declared fields, applies defaults and notes what is not declared', () => {
    const d = parseFields(path, { ttl: '1m', extra: 1, another: 'x' }, { name: 'web' });
    expect(d.get('name')).toBe('web');
    expect(d.get('ttl')).toBe(60);
    expect(d.get('enabled')).toBe(true);
    expect(d.sent('enabled')).toBe(false);
    expect(d.get('kind')).toBeUndefined();
    expect(d.ignored).toEqual(['another', 'extra']);
    expect(d.warnings).toEqual(['Endpoint ignored these unrecognized parameters: [another extra]']);
  });

  it('a default handed out is a copy', () => {
    const first = parseFields(path, {}, { name: 'web' });
    first.get('domains').push('x');
    expect(parseFields(path, {}, { name: 'web' }).get('domains')).toEqual([]);
  });

  it('the path wins over the body and says so', () => {
    const d = parseFields(path, { name: 'other' }, { name: 'web' });
    expect(d.get('name')).toBe('web');
    expect(d.warnings).toEqual([
      "Endpoint replaced the value of these parameters with the values captured from the endpoint's path: [name]",
    ]);
  });

  it('checks every declared field up front, required ones and allowed values', () => {
    expect(() => parseFields(path, { ttl: 'x', kind: 'a' }, { name: 'web' })).toThrow(
      'error converting input for field "ttl"',
    );
    expect(() => parseFields(path, {})).toThrow('missing required field "name"');
    expect(() => parseFields(path, { kind: 'c' }, { name: 'web' })).toThrow(
      'Field validation failed: error converting input for field "kind": "c" is not one of a, b',
    );
    expect(() => parseFields(path, { name: 'x' }, { name: '-x' })).toThrow(
      'field does not match the formatting rules',
    );
  });
});

describe('the certificate authority declares its role with the defaults a POST starts from', () => {
  it('every declared default equals the stored default role', async () => {
    const { ROLE_FIELDS } = await import('../../../src/secrets/pki/paths-role.js');
    const { defaultRole } = await import('../../../src/secrets/pki/role.js');
    const { allow_token_displayname: _ignored, ...role } = defaultRole();
    const declared = Object.fromEntries(
      Object.entries(ROLE_FIELDS)
        .filter(([name]) => name !== 'name')
        .map(([name, spec]) => [name, 'default' in spec ? spec.default : undefined]),
    );
    expect(declared).toEqual(role);
  });
});
