import { CreateGroupCommand } from '@aws-sdk/client-iam';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAws, type AwsHarness } from '../../support/aws.js';

/**
 * A role's policy_document is JSON a user wrote: the engine merges its statements with its groups'
 * for federation_token and assumed_role. One that parses but is not a policy (a Statement that is
 * a string, a document that is a list) is a 400 in Vault's dialect naming the field, not a 500,
 * and no credentials or lease are made.
 */

let h: AwsHarness;
beforeAll(async () => {
  h = await startAws();
  await h.cloud.iam().send(new CreateGroupCommand({ GroupName: 'devs' }));
});
afterAll(() => h.close());

let roles = 0;
const eventCount = () =>
  (h.app.core.db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;

describe("a role's policy_document merged with its groups' policies", () => {
  it.each([
    ['a Statement that is a string', '{"Version":"2012-10-17","Statement":"allow"}', '/Statement:'],
    ['a Statement list holding a string', '{"Statement":["allow"]}', '/Statement'],
    ['a document that is a list', '[{"Statement":[]}]', 'the document:'],
    ['a document that is null', 'null', 'the document:'],
  ])('with %s is a 400 naming it, and makes nothing', async (_, document, field) => {
    const name = `bad-${++roles}`;
    const made = await h.v1('POST', `aws/roles/${name}`, {
      body: {
        credential_type: 'federation_token',
        policy_document: document,
        iam_groups: ['devs'],
      },
    });
    expect(made.status, made.text).toBeLessThan(300);
    const before = eventCount();
    const res = await h.v1('GET', `aws/sts/${name}`);
    expect(res.status, res.text).toBe(400);
    const [error] = (res.json as { errors: string[] }).errors;
    expect(error).toMatch(
      /^Error reading group policies: MalformedPolicyDocument: the role's policy_document is not a policy document: /,
    );
    expect(error).toContain(field);
    expect(eventCount()).toBe(before);
  });

  it('with a single Statement object issues credentials', async () => {
    await h.v1('POST', 'aws/roles/single', {
      body: {
        credential_type: 'federation_token',
        policy_document:
          '{"Version":"2012-10-17","Statement":{"Effect":"Allow","Action":"*","Resource":"*"}}',
        iam_groups: ['devs'],
      },
    });
    const res = await h.v1('GET', 'aws/sts/single');
    expect(res.status, res.text).toBe(200);
  });
});
