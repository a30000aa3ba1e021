import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAws, type AwsHarness } from '../../support/aws.js';
import { startPkiApp, type PkiTestApp } from '../../support/pki-app.js';

/**
 * Both engines read a field with the same rules: a bool sent as 2, "yes" or " true" is refused with
 * the same words in each; "True", 1 and "" are read the same way in each.
 */
let pki: PkiTestApp;
let aws: AwsHarness;
beforeAll(async () => {
  pki = await startPkiApp();
  aws = await startAws();
});
afterAll(async () => {
  await pki.close();
  await aws.close();
});

const errorsOf = (res: { json: unknown }) => (res.json as { errors?: string[] }).errors;
const boolError = (field: string, text: string) =>
  `Field validation failed: error converting input for field "${field}": cannot parse '${field}' as bool: ${JSON.stringify(text)}`;

describe('one set of field rules for every engine', () => {
  const root = () => ({
    access_key: aws.cloud.root.accessKeyId,
    secret_key: aws.cloud.root.secretAccessKey,
  });

  for (const bad of [2, 'yes', ' true', 'tRuE']) {
    it(`a bool sent as ${JSON.stringify(bad)} is refused alike by pki and aws, and nothing is stored`, async () => {
      const role = await pki.pki('POST', 'roles/strict', { allow_any_name: bad });
      expect(role.status).toBe(400);
      expect(errorsOf(role)).toEqual([boolError('allow_any_name', String(bad))]);
      expect((await pki.pki('GET', 'roles/strict')).status).toBe(404);

      const before = await aws.v1('GET', 'aws/config/root');
      const config = await aws.v1('POST', 'aws/config/root', {
        body: { ...root(), disable_automated_rotation: bad },
      });
      expect(config.status).toBe(400);
      expect(errorsOf(config)).toEqual([boolError('disable_automated_rotation', String(bad))]);
      const dataOf = (res: { json: unknown }) => (res.json as { data: unknown }).data;
      expect(dataOf(await aws.v1('GET', 'aws/config/root'))).toEqual(dataOf(before));
    });
  }

  it('"True", 1 and "" read as true, true and false in both engines', async () => {
    for (const [sent, read] of [
      ['True', true],
      [1, true],
      ['', false],
    ] as const) {
      const role = await pki.pki('POST', 'roles/loose', { allow_any_name: sent });
      expect(role.status).toBe(200);
      expect(role.data).toMatchObject({ allow_any_name: read });
      const config = await aws.v1('POST', 'aws/config/root', {
        body: { ...root(), disable_automated_rotation: sent },
      });
      expect(config.status).toBe(204);
      const stored = await aws.v1('GET', 'aws/config/root');
      expect((stored.json as { data: Record<string, unknown> }).data).toMatchObject({
        disable_automated_rotation: read,
      });
    }
  });

  it('pki parses each path by its declared schema: undeclared fields are ignored with a warning, a bad declared one fails the request', async () => {
    const role = await pki.pki('POST', 'roles/declared', {
      allow_any_name: true,
      bogus: 1,
      allow_token_displayname: true,
    });
    expect(role.status).toBe(200);
    expect((role.json as { warnings: string[] }).warnings).toContain(
      'Endpoint ignored these unrecognized parameters: [allow_token_displayname bogus]',
    );
    expect(role.data).not.toHaveProperty('bogus');
    // A declared field the handler never reaches is still checked before anything is done.
    const tidy = await pki.pki('POST', 'tidy', { tidy_cert_store: false, tidy_acme: 'maybe' });
    expect(tidy.status).toBe(400);
    expect(errorsOf(tidy)).toEqual([boolError('tidy_acme', 'maybe')]);
  });

  it("the path's own segment wins over a body field of the same name, with the reference's warning", async () => {
    const role = await pki.pki('POST', 'roles/segment', { name: 'other', allow_any_name: true });
    expect(role.status).toBe(200);
    expect((role.json as { warnings: string[] }).warnings).toContain(
      "Endpoint replaced the value of these parameters with the values captured from the endpoint's path: [name]",
    );
    expect((await pki.pki('GET', 'roles/segment')).status).toBe(200);
    expect((await pki.pki('GET', 'roles/other')).status).toBe(404);
  });
});
