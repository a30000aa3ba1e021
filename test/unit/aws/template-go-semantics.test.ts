import { describe, expect, it } from 'vitest';
import { compileTemplate, TemplateError } from '../../../src/secrets/aws/template/index.js';
import type { TemplateEnv } from '../../../src/secrets/aws/template/index.js';

/**
 * The username template engine against outputs fixed outside Keel: Go's text/template and fmt
 * semantics (as the Go documentation states them) and the reference's template function tests
 * (restated here as input → output, from sdk/helper/template in the reference's repository).
 */

const env: TemplateEnv = {
  now: () => new Date('2023-11-14T22:13:20.250Z'),
  random: (n) => 'r'.repeat(n),
  uuid: () => '00000000-0000-4000-8000-000000000000',
};
const render = (src: string) => compileTemplate(src).render({}, env);

/** Go text/template and fmt: constants, pipelines, trim markers, truth, comparisons, print. */
const GO: [string, string][] = [
  ['{{"output"}}', 'output'],
  ['{{`output`}}', 'output'],
  ['{{printf "%q" "output"}}', '"output"'],
  ['{{"output" | printf "%q"}}', '"output"'],
  ['{{printf "%q" (print "out" "put")}}', '"output"'],
  ['{{"put" | printf "%s%s" "out" | printf "%q"}}', '"output"'],
  ['{{23 -}} < {{- 45}}', '23<45'],
  ['{{0x1F}}', '31'],
  ['{{-3}}', '-3'],
  ['{{print "a" 1}}', 'a1'],
  // fmt.Sprint puts a space between operands when neither is a string
  ['{{print 1 2}}', '1 2'],
  ['{{print true false "x" 3 4}}', 'true falsex3 4'],
  ['{{print 1 "a" 2}}', '1a2'],
  ['{{len "abc"}}', '3'],
  // len counts bytes, not characters
  ['{{len "é"}}', '2'],
  ['{{printf "%x" "hi"}}', '6869'],
  ['{{printf "%X" "hi"}}', '6869'],
  ['{{printf "%v" true}}', 'true'],
  ['{{printf "%t" false}}', 'false'],
  ['{{printf "%d%%" 42}}', '42%'],
  ['{{printf "%d" "x"}}', '%!d(string=x)'],
  ['{{printf "%s" 1}}', '%!s(int=1)'],
  ['{{printf "%s %s" "a"}}', 'a %!s(MISSING)'],
  // flags, width and precision
  ['{{printf "%5s|" "ab"}}', '   ab|'],
  ['{{printf "%-5s|" "ab"}}', 'ab   |'],
  ['{{printf "%.2s" "abc"}}', 'ab'],
  ['{{printf "%05s" "ab"}}', '000ab'],
  ['{{printf "%-4d|" 7}}', '7   |'],
  ['{{printf "%05d" 42}}', '00042'],
  ['{{printf "%05d" -42}}', '-0042'],
  ['{{printf "%+d" 5}}', '+5'],
  ['{{printf "%.3d" 7}}', '007'],
  ['{{printf "%-05d|" 3}}', '3    |'],
  ['{{printf "%6x" "hi"}}', '  6869'],
  ['{{printf "%x" 255}}', 'ff'],
  ['{{printf "%X" -255}}', '-FF'],
  ['{{printf "%8q" "a"}}', '     "a"'],
  // and/or return the deciding operand, not a bool
  ['{{and "a" "b"}}', 'b'],
  ['{{and 1 0}}', '0'],
  ['{{or "" "x"}}', 'x'],
  ['{{or 0 ""}}|', '|'],
  ['{{not ""}}', 'true'],
  ['{{if 0}}t{{else}}f{{end}}', 'f'],
  // a non-empty string is true, whatever it says
  ['{{if "0"}}t{{end}}', 't'],
  ['{{if "false"}}t{{end}}', 't'],
  ['{{lt "a" "b"}}', 'true'],
  ['{{le 2 2}}', 'true'],
  ['{{ge 1 2}}', 'false'],
  ['{{gt 1.5 1}}', 'true'],
  ['{{ne "a" "b"}}', 'true'],
  // eq with several arguments: equal to any of them
  ['{{eq "c" "a" "b" "c"}}', 'true'],
  ['{{/* a comment */}}x', 'x'],
];

/** The reference's template functions (input → output, as its own tests fix them). */
const LONG = 'thisisareallylongstring';
const REFERENCE: [string, string][] = [
  ['{{truncate 1 "foobarbaz"}}', 'f'],
  ['{{truncate 5 "foobarbaz"}}', 'fooba'],
  ['{{truncate 8 "foobarbaz"}}', 'foobarba'],
  ['{{truncate 9 "foobarbaz"}}', 'foobarbaz'],
  ['{{truncate 100 "foobarbaz"}}', 'foobarbaz'],
  [`{{truncate_sha256 9 "${LONG}"}}`, 't4bb25641'],
  [`{{truncate_sha256 12 "${LONG}"}}`, 'this704cd12b'],
  [`{{truncate_sha256 22 "${LONG}"}}`, 'thisisareallyl7f978be6'],
  [`{{truncate_sha256 23 "${LONG}"}}`, LONG],
  [`{{truncate_sha256 100 "${LONG}"}}`, LONG],
  ['{{sha256 ""}}', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  ['{{sha256 "foobar"}}', 'c3ab8ff13720e8ad9047dd39466b3c8974e592c2fa383d4a3960714caef0c4f2'],
  ['{{sha256 "mystring"}}', 'bd3ff47540b31e62d4ca6b07794e5a886b0f655fc322730f26ecd65cc7dd5c90'],
  ['{{uppercase "fOoBaR"}}', 'FOOBAR'],
  ['{{lowercase "fOoBaR"}}', 'foobar'],
  ['{{uppercase ""}}|', '|'],
  ['{{replace "." "_" "foobar"}}', 'foobar'],
  ['{{replace "." "_" "foo.bar.baz"}}', 'foo_bar_baz'],
  ['{{replace "." "" "foo.bar"}}', 'foobar'],
  ['{{replace "bar" "_" "foobarbaz"}}', 'foo_baz'],
  ['{{replace "" "" ""}}|', '|'],
];

describe('username templates: Go semantics and the reference functions', () => {
  it.each(GO)('Go: %s', (src, expected) => expect(render(src)).toBe(expected));
  it.each(REFERENCE)('reference: %s', (src, expected) => expect(render(src)).toBe(expected));

  const refused: [string, RegExp][] = [
    ['{{truncate 0 "foobarbaz"}}', /max length must be > 0 but was 0/],
    ['{{truncate -1 "foobarbaz"}}', /max length must be > 0 but was -1/],
    [`{{truncate_sha256 8 "${LONG}"}}`, /max length must be > 8 but was 8/],
    [`{{truncate_sha256 0 "${LONG}"}}`, /max length must be > 8 but was 0/],
  ];
  it.each(refused)('reference refuses %s', (src, message) => {
    expect(() => render(src)).toThrow(TemplateError);
    expect(() => render(src)).toThrow(message);
  });

  it('unix_time and unix_time_millis are the clock in seconds and milliseconds', () => {
    expect(render('{{unix_time}}|{{unix_time_millis}}')).toBe('1700000000|1700000000250');
  });

  it('uuid has the 8-4-4-4-12 shape', () => {
    expect(render('{{uuid}}')).toMatch(
      /^[a-zA-Z0-9]{8}-[a-zA-Z0-9]{4}-[a-zA-Z0-9]{4}-[a-zA-Z0-9]{4}-[a-zA-Z0-9]{12}$/,
    );
  });
});
