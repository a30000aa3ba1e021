import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { KeelError } from '../../../src/core/errors.js';
import {
  compileTemplate,
  DEFAULT_USERNAME_TEMPLATE,
  generateUsername,
  TemplateError,
} from '../../../src/secrets/aws/template/index.js';
import type { TemplateEnv } from '../../../src/secrets/aws/template/index.js';

const NOW = new Date('2023-11-14T22:13:20.250Z'); // unix 1700000000
const env: TemplateEnv = {
  now: () => NOW,
  random: (n) => 'AbCdEfGhIjKlMnOpQrStUvWxYz0123456789'.repeat(3).slice(0, n),
  uuid: () => '123e4567-e89b-42d3-a456-426614174000',
};
const data = { Type: 'IAM', DisplayName: 'root', PolicyName: 'myrole' };
const render = (src: string, d: Record<string, string> = data) =>
  compileTemplate(src).render(d, env);

describe('username template: the default template', () => {
  it('is the reference default byte for byte (two spaces in the STS branch)', () => {
    expect(DEFAULT_USERNAME_TEMPLATE).toContain('printf "vault-%s-%s"  (unix_time)');
    expect(DEFAULT_USERNAME_TEMPLATE.startsWith('{{ if (eq .Type "STS") }}')).toBe(true);
  });

  it('renders an IAM name: prefix, display and policy name, unix time, 20 random characters', () => {
    const name = render(DEFAULT_USERNAME_TEMPLATE);
    expect(name).toBe('vault-root-myrole-1700000000-AbCdEfGhIjKlMnOpQrSt');
    expect(name).toHaveLength(49);
  });

  it('renders an STS name truncated to 32 (15 random characters survive)', () => {
    const name = render(DEFAULT_USERNAME_TEMPLATE, {
      Type: 'STS',
      DisplayName: '',
      PolicyName: '',
    });
    expect(name).toBe('vault-1700000000-AbCdEfGhIjKlMnO');
    expect(name).toHaveLength(32);
  });

  it('truncates display-policy to 42 and the whole name to 64', () => {
    const name = render(DEFAULT_USERNAME_TEMPLATE, {
      Type: 'IAM',
      DisplayName: 'd'.repeat(40),
      PolicyName: 'p'.repeat(40),
    });
    expect(name).toBe(
      `vault-${'d'.repeat(40)}-p`.slice(0, 6 + 42) + '-1700000000-AbCdEfGhIjKlMn'.slice(0, 64 - 48),
    );
    expect(name).toHaveLength(64);
  });
});

describe('username template: the language', () => {
  const cases: [string, string, string][] = [
    ['text only', 'plain-text', 'plain-text'],
    ['field', '{{.DisplayName}}', 'root'],
    ['trim markers', 'a  {{- .PolicyName -}}  b', 'amyroleb'],
    ['comment', 'x{{/* a comment */}}y', 'xy'],
    ['trimmed comment', 'x {{- /* c */ -}} y', 'xy'],
    ['if true', '{{ if eq .Type "IAM" }}iam{{ end }}', 'iam'],
    ['if false, else', '{{ if eq .Type "STS" }}sts{{ else }}other{{ end }}', 'other'],
    ['else if', '{{ if eq .Type "A" }}a{{ else if eq .Type "IAM" }}iam{{ else }}z{{ end }}', 'iam'],
    [
      'else if falls through',
      '{{ if eq .Type "A" }}a{{ else if eq .Type "B" }}b{{ else }}z{{ end }}',
      'z',
    ],
    ['eq with many', '{{ if eq .Type "A" "B" "IAM" }}yes{{ end }}', 'yes'],
    ['empty string is false', '{{ if .Missing2 }}{{ end }}', ''],
    ['pipeline', '{{ .PolicyName | uppercase }}', 'MYROLE'],
    ['chained pipeline', '{{ .PolicyName | uppercase | truncate 3 }}', 'MYR'],
    ['parenthesised call', '{{ truncate 2 (uppercase .DisplayName) }}', 'RO'],
    ['printf', '{{ printf "%s-%s" .DisplayName .PolicyName }}', 'root-myrole'],
    ['printf %d and %%', '{{ printf "%d%%" 42 }}', '42%'],
    ['printf wrong verb', '{{ printf "%d" "x" }}', '%!d(string=x)'],
    ['printf missing arg', '{{ printf "%s-%s" "a" }}', 'a-%!s(MISSING)'],
    ['unix_time', '{{ unix_time }}', '1700000000'],
    ['unix_time_millis', '{{ unix_time_millis }}', '1700000000250'],
    ['random', '{{ random 5 }}', 'AbCdE'],
    ['truncate longer than input', '{{ truncate 100 "abc" }}', 'abc'],
    ['truncate_sha256 short input', '{{ truncate_sha256 10 "abc" }}', 'abc'],
    ['lowercase', '{{ lowercase "ABC" }}', 'abc'],
    ['replace', '{{ replace "-" "_" "a-b-c" }}', 'a_b_c'],
    ['replace piped', '{{ "a-b" | replace "-" "." }}', 'a.b'],
    [
      'sha256',
      '{{ sha256 "abc" }}',
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    ],
    ['base64', '{{ base64 "hello" }}', 'aGVsbG8='],
    ['uuid', '{{ uuid }}', '123e4567-e89b-42d3-a456-426614174000'],
    ['timestamp', '{{ timestamp "2006-01-02T15:04:05Z07:00" }}', '2023-11-14T22:13:20Z'],
    ['timestamp compact', '{{ timestamp "20060102150405.000" }}', '20231114221320.250'],
    ['timestamp words', '{{ timestamp "Mon Jan _2 3PM" }}', 'Tue Nov 14 10PM'],
    ['raw string', '{{ `a"b` }}', 'a"b'],
    ['escaped string', '{{ "a\\"b" }}', 'a"b'],
    ['number literal', '{{ 7 }}', '7'],
    ['bool literal', '{{ not false }}', 'true'],
    ['and/or', '{{ or "" "x" }}{{ and "a" "" }}', 'x'],
  ];
  it.each(cases)('%s', (_title, src, expected) => {
    const d = { ...data, Missing2: '' };
    expect(render(src, d)).toBe(expected);
  });

  it('truncate_sha256 keeps N-8 characters and 8 hex of the tail hash', () => {
    const out = render('{{ truncate_sha256 12 "abcdefghijklmnop" }}');
    expect(out).toHaveLength(12);
    expect(out.slice(0, 4)).toBe('abcd');
    expect(out.slice(4)).toMatch(/^[0-9a-f]{8}$/);
  });

  const parseErrors: [string, RegExp][] = [
    ['{{ .X', /unclosed action/],
    ['{{ if .Type }}x', /missing \{\{end\}\}/],
    ['{{ end }}', /unexpected \{\{end\}\}/],
    ['{{ else }}', /unexpected \{\{else\}\}/],
    ['{{ nope 1 }}', /function "nope" not defined/],
    ['{{ (truncate 1 "a" }}', /unclosed left paren/],
    ['{{ "abc }}', /unterminated quoted string/],
    ['{{ range .X }}{{ end }}', /\{\{range\}\} is not supported/],
    ['{{ $x := 1 }}', /variables are not supported/],
    ['{{ }}', /missing value for command/],
    ['{{ .A | }}', /missing command in pipeline/],
    ['{{ if .A }}a{{ else }}b{{ else }}c{{ end }}', /expected end; found \{\{else\}\}/],
    ['{{ 12ab }}', /bad number syntax/],
    ['{{ @ }}', /unexpected "@"/],
    ['x'.repeat(100_000), /too long/],
  ];
  it.each(parseErrors)('parse error for %j', (src, msg) => {
    let err: unknown;
    try {
      compileTemplate(src);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TemplateError);
    expect((err as TemplateError).kind).toBe('parse');
    expect((err as Error).message).toMatch(/^template: username/);
    expect((err as Error).message).toMatch(msg);
  });

  const execErrors: [string, RegExp][] = [
    ['{{ .Nope }}', /can't evaluate field Nope in type UsernameMetadata/],
    ['{{ random "x" }}', /wrong type for value; expected int; got string/],
    ['{{ truncate 0 "abc" }}', /max length must be > 0 but was 0/],
    ['{{ truncate_sha256 8 "abc" }}', /max length must be > 8 but was 8/],
    ['{{ random }}', /wrong number of args for random: want 1 got 0/],
    ['{{ .Type "x" }}', /can't give argument to non-function \.Type/],
    ['{{ "a" | "b" }}', /can't give argument to non-function "b"/],
    ['{{ eq .Type 1 }}', /incompatible types for comparison/],
    ['{{ . }}', /no printable value/],
  ];
  it.each(execErrors)('execution error for %j', (src, msg) => {
    const t = compileTemplate(src);
    expect(() => t.render(data, env)).toThrow(TemplateError);
    expect(() => t.render(data, env)).toThrow(msg);
  });
});

describe('generateUsername', () => {
  it('normalises display and policy names before rendering', () => {
    const name = generateUsername(
      DEFAULT_USERNAME_TEMPLATE,
      { type: 'IAM', displayName: 'token-ci bot', policyName: 'r/1' },
      env,
    );
    expect(name.startsWith('vault-token-ci_bot-r_1-1700000000-')).toBe(true);
  });

  it('refuses an IAM name over 64 characters with the reference 500', () => {
    const err = (() => {
      try {
        generateUsername(
          '{{ random 65 }}',
          { type: 'IAM', displayName: 'a', policyName: 'b' },
          env,
        );
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(KeelError);
    expect((err as KeelError).code).toBe('internal');
    expect((err as KeelError).details.status).toBe(500);
    expect((err as Error).message).toBe(
      'the username generated by the template exceeds the IAM username length limits of 64 chars',
    );
  });

  it('refuses an STS name over 32 characters', () => {
    expect(() =>
      generateUsername('{{ random 33 }}', { type: 'STS', displayName: '', policyName: '' }, env),
    ).toThrow(
      'the username generated by the template exceeds the STS username length limits of 32 chars',
    );
  });

  it('reports template parse errors as 500 with the reference wording', () => {
    expect(() =>
      generateUsername('{{ if }}', { type: 'IAM', displayName: '', policyName: '' }, env),
    ).toThrow(
      /^unable to initialize username template: unable to parse template: template: username:1: missing value for command/,
    );
  });
});

describe('properties', () => {
  const safeText = fc.string({ unit: fc.constantFrom(...'abcXYZ019-_ .}'.split('')) });
  const word = fc.string({
    unit: fc.constantFrom(...'abcdefghXYZ0123456789+=,.@_-/ '.split('')),
    maxLength: 80,
  });

  it('the default template renders for any names and respects both caps', () => {
    fc.assert(
      fc.property(
        word,
        word,
        fc.constantFrom<'IAM' | 'STS'>('IAM', 'STS'),
        fc.integer({ min: 0, max: 4_000_000_000_000 }),
        (d, p, type, ms) => {
          const e: TemplateEnv = { ...env, now: () => new Date(ms) };
          const name = generateUsername(
            DEFAULT_USERNAME_TEMPLATE,
            { type, displayName: d, policyName: p },
            e,
          );
          expect(name.length).toBeLessThanOrEqual(type === 'STS' ? 32 : 64);
          expect(name).toMatch(/^vault-[A-Za-z0-9+=,.@_-]+$/);
        },
      ),
    );
  });

  // Random templates assembled from valid pieces: rendering never throws anything but a TemplateError
  // and generateUsername never returns a name over the cap.
  const piece = fc.oneof(
    safeText,
    fc.constantFrom(
      '{{ .DisplayName }}',
      '{{ .PolicyName | uppercase }}',
      '{{ unix_time }}',
      '{{ random 10 }}',
      '{{ uuid }}',
      '{{ sha256 .Type }}',
      '{{ truncate 5 .PolicyName }}',
      '{{ printf "%s_%s" .Type (random 3) }}',
      '{{- " " -}}',
    ),
    fc.integer({ min: 1, max: 90 }).map((n) => `{{ random ${n} }}`),
  );
  const tmpl = fc
    .array(piece, { maxLength: 8 })
    .chain((parts) =>
      fc
        .boolean()
        .map((wrap) =>
          wrap
            ? `{{ if eq .Type "STS" }}${parts.join('')}{{ else }}${parts.reverse().join('')}{{ end }}`
            : parts.join(''),
        ),
    );
  it('valid templates render without throwing and the caps are always enforced', () => {
    fc.assert(
      fc.property(tmpl, word, fc.constantFrom<'IAM' | 'STS'>('IAM', 'STS'), (src, d, type) => {
        const rendered = compileTemplate(src).render(
          { Type: type, DisplayName: d, PolicyName: d },
          env,
        );
        expect(typeof rendered).toBe('string');
        let name: string | null = null;
        try {
          name = generateUsername(src, { type, displayName: d, policyName: d }, env);
        } catch (e) {
          expect((e as Error).message).toMatch(/exceeds the (IAM|STS) username length limits/);
        }
        if (name !== null)
          expect(Buffer.byteLength(name)).toBeLessThanOrEqual(type === 'STS' ? 32 : 64);
      }),
    );
  });
});
