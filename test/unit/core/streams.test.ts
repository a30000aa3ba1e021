import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { streamName, type StreamName } from '../../../src/core/streams.js';
import {
  configStream,
  leaseStream,
  roleStream,
  staticRoleStream,
} from '../../../src/secrets/aws/events.js';
import { intentStream } from '../../../src/secrets/aws/intents.js';
import { mountStream, policyStream, tokenStream } from '../../../src/secrets/sys/events.js';
import { streams } from '../../../src/secrets/pki/events.js';
import { acmeStreams } from '../../../src/secrets/pki/acme/events.js';
import { authTokenStream, userStream } from '../../../src/runs/identity/events.js';
import { loginCodeStream } from '../../../src/runs/cli/login-codes.js';
import { organizationStream } from '../../../src/runs/events.js';
import { planArtifactStream } from '../../../src/runs/executor/events.js';
import { executionSettingsStream } from '../../../src/runs/executor/checks/events.js';

type AnyName = StreamName<readonly string[]>;
const kind = (name: StreamName<readonly string[]>): AnyName => name;

/** Every kind of stream id, each with an id as logs hold it today (written out by hand). */
const KINDS: [string, AnyName, string[], string][] = [
  ['aws config', kind(configStream), ['acc1'], 'aws-config:acc1'],
  ['aws role', kind(roleStream), ['acc1', 'web'], 'aws-role:acc1:web'],
  ['aws static role', kind(staticRoleStream), ['acc1', 'db'], 'aws-static-role:acc1:db'],
  ['aws lease', kind(leaseStream), ['aws/creds/web/abc'], 'aws-lease:aws/creds/web/abc'],
  ['aws intent', kind(intentStream), ['i1'], 'aws-intent:i1'],
  ['secrets token', kind(tokenStream), ['xyz'], 'secrets-token-xyz'],
  ['acl policy', kind(policyStream), ['ops'], 'acl-policy-ops'],
  ['mount', kind(mountStream), ['pki/'], 'mount-pki/'],
  ['pki cert', kind(streams.cert), ['m1', '1a-2b'], 'pki/m1/cert/1a-2b'],
  ['pki role', kind(streams.role), ['m1', 'web'], 'pki/m1/role/web'],
  ['pki key', kind(streams.key), ['m1', 'k1'], 'pki/m1/key/k1'],
  ['pki issuer', kind(streams.issuer), ['m1', 'i1'], 'pki/m1/issuer/i1'],
  ['pki crl', kind(streams.crl), ['m1', 'i1'], 'pki/m1/crl/i1'],
  ['pki config', kind(streams.config), ['m1'], 'pki/m1/config'],
  ['acme settings', kind(acmeStreams.settings), ['m1'], 'pki/m1/acme-settings'],
  ['acme account', kind(acmeStreams.account), ['m1', 'a1'], 'pki/m1/acme-account/a1'],
  ['acme order', kind(acmeStreams.order), ['m1', 'o1'], 'pki/m1/acme-order/o1'],
  ['acme authz', kind(acmeStreams.authorization), ['m1', 'z1'], 'pki/m1/acme-authz/z1'],
  [
    'acme challenge',
    kind(acmeStreams.challenge),
    ['m1', 'z1', 'http-01'],
    'pki/m1/acme-challenge/z1/http-01',
  ],
  ['user', kind(userStream), ['user-1'], 'user-user-1'],
  ['auth token', kind(authTokenStream), ['at-1'], 'auth-token-at-1'],
  ['login code', kind(loginCodeStream), ['c1'], 'login-code-c1'],
  ['organization', kind(organizationStream), ['acme'], 'org-acme'],
  ['plan artifact', kind(planArtifactStream), ['run-1'], 'run-1:plan-artifact'],
  ['execution settings', kind(executionSettingsStream), ['acme'], 'settings-acme'],
];

/** Text rich in the characters ids are split on. */
const text = fc.string({ unit: fc.constantFrom(':', '/', '-', 'a', 'Z', '0', ' ', 'é', '\n') });

/**
 * The terminator of each field, read off the example id: the character right after the field's
 * value ('' for a field that ends the id).
 */
function terminators(id: string, values: string[]): string[] {
  let at = 0;
  return values.map((v) => {
    at = id.indexOf(v, at) + v.length;
    return id[at] ?? '';
  });
}

describe('stream names', () => {
  it.each(KINDS)('%s ids are as logs hold them', (_, name, values, id) => {
    expect(name(...values)).toBe(id);
    expect(Object.values(name.parse(id) ?? {})).toEqual(values);
  });

  it.each(KINDS)(
    '%s: parse(id(fields)) gives the fields back, whatever they hold',
    (_, name, values, id) => {
      const ends = terminators(id, values);
      const field = (end: string) => (end === '' ? text : text.filter((t) => !t.includes(end)));
      fc.assert(
        fc.property(fc.tuple(...ends.map(field)), (fields) => {
          const parsed = name.parse(name(...fields));
          expect(parsed === null ? null : Object.values(parsed)).toEqual(fields);
        }),
      );
    },
  );

  it('refuses a field that would run into the text after it', () => {
    expect(() => roleStream('a:b', 'web')).toThrow(/accessor cannot hold ":"/);
    expect(() => streams.cert('m/1', 'x')).toThrow(/mount/);
    expect(() => streamName`a${'x'}${'y'}`).toThrow(/runs into the next one/);
  });

  it('never reads one kind of the shared pki/ and aws- families as another', () => {
    const family = KINDS.filter(
      ([, n]) => n.prefix.startsWith('pki/') || n.prefix.startsWith('aws-'),
    );
    const safe = text.filter((t) => !t.includes('/') && !t.includes(':'));
    fc.assert(
      fc.property(
        fc.nat(family.length - 1),
        fc.array(safe, { minLength: 3, maxLength: 3 }),
        (i, values) => {
          const [, name, example] = family[i]!;
          const id = name(...values.slice(0, example.length));
          const readers = family.filter(([, other]) => other.parse(id) !== null).map(([n]) => n);
          expect(readers).toEqual([family[i]![0]]);
        },
      ),
    );
  });

  it('reads nothing of other streams', () => {
    expect(roleStream.parse('aws-static-role:a:b')).toBeNull();
    expect(streams.config.parse('pki/m/role/config')).toBeNull();
    expect(planArtifactStream.parse('run-1')).toBeNull();
  });
});
