import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateAccessKeyCommand, CreateUserCommand, GetUserCommand } from '@aws-sdk/client-iam';
import { GetCallerIdentityCommand } from '@aws-sdk/client-sts';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { signRequest } from '../../support/sigv4.js';
import { ManualClock } from '../../../src/core/clock.js';
import { clientsFor } from '../../support/cloud-clients.js';
import type { Creds } from '../../support/cloud-clients.js';
import { startCloud } from '../../support/cloud-server.js';
import type { CloudServer } from '../../support/cloud-server.js';

const IAM_NS = 'https://iam.amazonaws.com/doc/2010-05-08/';
const STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/';

let clock: ManualClock;
let server: CloudServer;

interface Sent {
  status: number;
  text: string;
  code: string | undefined;
}

/** Sends a Query-protocol request, signed with `creds` at the cloud's time unless told otherwise. */
async function send(
  service: 'iam' | 'sts',
  form: string,
  opts: {
    creds?: Creds | null;
    method?: 'GET' | 'POST';
    at?: Date;
    region?: string;
    mutate?: (h: Record<string, string>) => void;
  } = {},
): Promise<Sent> {
  const method = opts.method ?? 'POST';
  const url = new URL(service === 'iam' ? server.iamEndpoint : server.stsEndpoint);
  const path = url.pathname;
  const query = method === 'GET' ? form : '';
  const body = method === 'POST' ? Buffer.from(form) : Buffer.alloc(0);
  let headers: Record<string, string> = { host: url.host };
  if (method === 'POST')
    headers['content-type'] = 'application/x-www-form-urlencoded; charset=utf-8';
  const creds = opts.creds === undefined ? server.root : opts.creds;
  if (creds) {
    headers = signRequest(
      { method, path, query, body, headers },
      creds,
      opts.region ?? 'us-east-1',
      service,
      opts.at ?? clock.now(),
    );
  }
  opts.mutate?.(headers);
  const res = await fetch(`${url.origin}${path}${query ? `?${query}` : ''}`, {
    method,
    headers,
    ...(method === 'POST' ? { body } : {}),
  });
  const text = await res.text();
  return { status: res.status, text, code: /<Code>([^<]*)<\/Code>/.exec(text)?.[1] };
}

beforeEach(async () => {
  clock = new ManualClock(Date.now());
  server = await startCloud(clock);
});
afterEach(async () => {
  await server.close();
});

describe('the Query protocol on the wire', () => {
  it('answers POST and GET with namespaced XML and a RequestId', async () => {
    const post = await send('sts', 'Action=GetCallerIdentity&Version=2011-06-15');
    expect(post.status).toBe(200);
    expect(post.text).toMatch(
      new RegExp(
        `^<GetCallerIdentityResponse xmlns="${STS_NS}"><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/keel-root</Arn>.*<ResponseMetadata><RequestId>[0-9a-f-]{36}</RequestId></ResponseMetadata></GetCallerIdentityResponse>$`,
      ),
    );
    const get = await send('iam', 'Action=ListUsers&Version=2010-05-08&MaxItems=1', {
      method: 'GET',
    });
    expect(get.status).toBe(200);
    expect(get.text).toContain(
      `<ListUsersResponse xmlns="${IAM_NS}"><ListUsersResult><Users><member><Path>/</Path><UserName>keel-root</UserName>`,
    );
    const del = await send('iam', 'Action=CreateUser&Version=2010-05-08&UserName=x');
    expect(del.status).toBe(200);
    const tagged = await send(
      'iam',
      'Action=TagUser&Version=2010-05-08&UserName=x&Tags.member.1.Key=a&Tags.member.1.Value=b',
    );
    expect(tagged.text).toMatch(
      new RegExp(`^<TagUserResponse xmlns="${IAM_NS}"><ResponseMetadata><RequestId>`),
    );
  });

  it('renders errors as ErrorResponse documents with AWS codes and statuses', async () => {
    const missing = await send('iam', 'Action=GetUser&Version=2010-05-08&UserName=ghost');
    expect(missing.status).toBe(404);
    expect(missing.text).toMatch(
      new RegExp(
        `^<ErrorResponse xmlns="${IAM_NS}"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The user with name ghost cannot be found.</Message></Error><RequestId>[0-9a-f-]{36}</RequestId></ErrorResponse>$`,
      ),
    );
    const cases: [Promise<Sent>, string, number][] = [
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', { creds: null }),
        'MissingAuthenticationToken',
        403,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          mutate: (h) =>
            (h.authorization =
              'AWS4-HMAC-SHA256 Credential=AKIAX/20260101/us-east-1/iam/aws4_request'),
        }),
        'IncompleteSignature',
        400,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          creds: { accessKeyId: 'AKIAUNKNOWN000000000', secretAccessKey: 'x' },
        }),
        'InvalidClientTokenId',
        403,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          creds: { ...server.root, secretAccessKey: 'wrong' },
        }),
        'SignatureDoesNotMatch',
        403,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          at: new Date(clock.now().getTime() - 6 * 60_000),
        }),
        'SignatureDoesNotMatch',
        403,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          at: new Date(clock.now().getTime() + 6 * 60_000),
        }),
        'SignatureDoesNotMatch',
        403,
      ],
      [
        send('iam', 'Action=GetUser&Version=2010-05-08&UserName=x', {
          mutate: (h) => (h['x-amz-date'] = '20200101T000000Z'),
        }),
        'SignatureDoesNotMatch',
        403,
      ],
      [send('iam', 'Action=GetCallerIdentity&Version=2010-05-08'), 'InvalidAction', 400],
      [send('iam', 'Action=GetUser&Version=2011-01-01'), 'InvalidAction', 400],
      [send('iam', 'Version=2010-05-08'), 'MissingAction', 400],
      [send('iam', 'Action=CreateUser&Version=2010-05-08'), 'ValidationError', 400],
      [
        send('iam', `Action=CreateUser&Version=2010-05-08&UserName=${'u'.repeat(65)}`),
        'ValidationError',
        400,
      ],
      [
        send('iam', 'Action=CreateUser&Version=2010-05-08&UserName=keel-root'),
        'EntityAlreadyExists',
        409,
      ],
      [
        send(
          'iam',
          'Action=PutUserPolicy&Version=2010-05-08&UserName=keel-root&PolicyName=p&PolicyDocument=%7B',
        ),
        'MalformedPolicyDocument',
        400,
      ],
      [
        send('iam', 'Action=DeleteUser&Version=2010-05-08&UserName=keel-root'),
        'DeleteConflict',
        409,
      ],
      [
        send(
          'iam',
          'Action=AttachUserPolicy&Version=2010-05-08&UserName=keel-root&PolicyArn=arn:aws:iam::aws:policy/Nope',
        ),
        'NoSuchEntity',
        404,
      ],
      // Credentials scoped to STS do not sign IAM requests.
      [
        send('iam', 'Action=GetUser&Version=2010-05-08', {
          mutate: (h) => (h.authorization = (h.authorization ?? '').replace('/iam/', '/sts/')),
        }),
        'SignatureDoesNotMatch',
        403,
      ],
    ];
    for (const [p, code, status] of cases) {
      const r = await p;
      expect({ code: r.code, status: r.status }, r.text).toEqual({ code, status });
      expect(r.text).toMatch(
        /^<ErrorResponse xmlns="https:\/\/iam\.amazonaws\.com\/doc\/2010-05-08\/"><Error><Type>Sender<\/Type>/,
      );
    }
    const skew = await send('sts', 'Action=GetCallerIdentity&Version=2011-06-15', {
      at: new Date(clock.now().getTime() - 6 * 60_000),
    });
    expect(skew.text).toMatch(
      /Signature expired: \d{8}T\d{6}Z is now earlier than \d{8}T\d{6}Z \(\d{8}T\d{6}Z - 5 min\.\)/,
    );
    expect(skew.text).toContain(`xmlns="${STS_NS}"`);
  });

  it('answers a fault on its side as a Receiver InternalFailure with status 500', async () => {
    server.cloud.close();
    const r = await send('sts', 'Action=GetCallerIdentity&Version=2011-06-15');
    expect(r.status).toBe(500);
    expect(r.text).toMatch(
      /^<ErrorResponse xmlns="https:\/\/sts\.amazonaws\.com\/doc\/2011-06-15\/"><Error><Type>Receiver<\/Type><Code>InternalFailure<\/Code><Message>The request processing has failed because of an unknown error\.<\/Message>/,
    );
  });

  it('accepts a signature scoped to any region', async () => {
    for (const region of ['us-east-1', 'eu-central-1', 'keel-local']) {
      expect(
        (await send('sts', 'Action=GetCallerIdentity&Version=2011-06-15', { region })).status,
      ).toBe(200);
    }
  });

  it('leaves other paths to the next middleware and refuses other methods', async () => {
    const res = await fetch(`${server.base}/cloud/elsewhere`);
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('not the cloud');
    const put = await fetch(server.iamEndpoint, { method: 'PUT' });
    expect(put.status).toBe(400);
    expect(await put.text()).toContain('<Code>InvalidAction</Code>');
  });

  it('changes nothing when a request is refused', async () => {
    const bad = await send('iam', 'Action=CreateUser&Version=2010-05-08&UserName=sneaky', {
      creds: { ...server.root, secretAccessKey: 'wrong' },
    });
    expect(bad.code).toBe('SignatureDoesNotMatch');
    expect((await send('iam', 'Action=GetUser&Version=2010-05-08&UserName=sneaky')).code).toBe(
      'NoSuchEntity',
    );
    // A tag list over the quota is refused whole: the user is not created either.
    const tags = Array.from(
      { length: 51 },
      (_, i) => `Tags.member.${i + 1}.Key=k${i}&Tags.member.${i + 1}.Value=v`,
    ).join('&');
    expect(
      (await send('iam', `Action=CreateUser&Version=2010-05-08&UserName=tagged&${tags}`)).code,
    ).toBe('LimitExceeded');
    expect((await send('iam', 'Action=GetUser&Version=2010-05-08&UserName=tagged')).code).toBe(
      'NoSuchEntity',
    );
  });
});

describe('persistence', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'keel-cloud-'));
  });
  afterEach(() => {
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps users, keys and the root key across a restart of the same file', async () => {
    const file = join(dir, 'cloud.sqlite');
    const first = await startCloud(clock, file);
    const c1 = clientsFor(first, clock, first.root);
    await c1.iam.send(new CreateUserCommand({ UserName: 'durable' }));
    const k = await c1.iam.send(new CreateAccessKeyCommand({ UserName: 'durable' }));
    await first.close();
    expect(statSync(file).mode & 0o777).toBe(0o600);

    const second = await startCloud(clock, file);
    expect(second.root).toEqual(first.root);
    const creds = {
      accessKeyId: k.AccessKey?.AccessKeyId ?? '',
      secretAccessKey: k.AccessKey?.SecretAccessKey ?? '',
    };
    const c2 = clientsFor(second, clock, creds);
    expect((await c2.sts.send(new GetCallerIdentityCommand({}))).Arn).toBe(
      'arn:aws:iam::123456789012:user/durable',
    );
    expect(
      (
        await clientsFor(second, clock, second.root).iam.send(
          new GetUserCommand({ UserName: 'durable' }),
        )
      ).User?.UserName,
    ).toBe('durable');
    await second.close();
  });
});
