import Router, { type MatchResult } from '@koa/router';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rememberMatches } from '../../../src/http/route-match.js';

function routes(): Router {
  const r = new Router();
  r.use((_ctx, next) => next());
  r.get('/issue/:role', () => undefined);
  r.post('/issue/:role', () => undefined);
  r.post('/issuer/:ref/issue/:role', () => undefined);
  r.get('/cert/:serial', () => undefined);
  r.delete('/roles/:name', () => undefined);
  r.get('/roles', () => undefined);
  return r;
}

/** What a match says, by layer path: the same layers in the same order. */
const shape = (m: MatchResult) => ({
  path: m.path.map((l) => `${l.methods.join(',')} ${l.path}`),
  pathAndMethod: m.pathAndMethod.map((l) => `${l.methods.join(',')} ${l.path}`),
  route: m.route,
});

describe('rememberMatches', () => {
  it('answers what the router itself answers, for any path and method, asked any number of times', () => {
    const plain = routes();
    const remembered = rememberMatches(routes());
    const segment = fc.constantFrom('issue', 'issuer', 'cert', 'roles', 'ec', 'x', '', 'a%2Fb');
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.array(segment, { maxLength: 5 }).map((s) => `/${s.join('/')}`),
            fc.constantFrom('GET', 'POST', 'DELETE', 'put', 'HEAD'),
          ),
          { maxLength: 30 },
        ),
        (calls) => {
          for (const [path, method] of [...calls, ...calls])
            expect(shape(remembered.match(path, method))).toEqual(shape(plain.match(path, method)));
        },
      ),
    );
  });

  it('gives each call arrays of its own, which the router may append to', () => {
    const r = rememberMatches(routes());
    const expected = shape(routes().match('/issue/ec', 'POST'));
    const first = r.match('/issue/ec', 'POST');
    first.path.push(...first.path);
    first.pathAndMethod.length = 0;
    expect(shape(r.match('/issue/ec', 'POST'))).toEqual(expected);
    expect(expected.path).toHaveLength(3);
    expect(expected.route).toBe(true);
  });

  it('sees a route added after a path was matched', () => {
    const r = rememberMatches(routes());
    expect(r.match('/config/urls', 'GET').route).toBe(false);
    r.get('/config/urls', () => undefined);
    expect(r.match('/config/urls', 'GET').route).toBe(true);
  });

  it('matches long paths afresh and keeps a bounded memo', () => {
    const r = rememberMatches(routes());
    const long = `/cert/${'a'.repeat(300)}`;
    expect(r.match(long, 'GET').route).toBe(true);
    for (let i = 0; i < 2500; i++) expect(r.match(`/cert/${i}`, 'GET').route).toBe(true);
    expect(r.match('/roles', 'DELETE').route).toBe(false);
  });
});
