import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ListMethodRewriter } from '../../../src/http/list-method.js';

const feedAll = (chunks: string[]) => {
  const r = new ListMethodRewriter();
  return Buffer.concat(chunks.map((c) => r.feed(Buffer.from(c, 'latin1')))).toString('latin1');
};

describe('ListMethodRewriter', () => {
  it('turns LIST into a marked GET', () => {
    expect(feedAll(['LIST /v1/pki/roles HTTP/1.1\r\nHost: x\r\n\r\n'])).toBe(
      'GET /v1/pki/roles HTTP/1.1\r\nx-keel-original-method: LIST\r\nHost: x\r\n\r\n',
    );
  });

  it('hands any other head on as the very bytes that came', () => {
    const head = Buffer.from('GET /v1/sys/health HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n');
    expect(new ListMethodRewriter().feed(head).equals(head)).toBe(true);
  });

  it('hands bytes that cannot start a request line on at once, not waiting for a head', () => {
    const r = new ListMethodRewriter();
    const hello = Buffer.from('16030100a5010000a10303', 'hex');
    expect(r.feed(hello).equals(hello)).toBe(true);
    expect(r.feed(Buffer.from('more')).toString()).toBe('more');
    // A head arriving a byte at a time is still held until it is whole.
    const slow = new ListMethodRewriter();
    const parts = [...'LIST /v1/a HTTP/1.1\r\n\r\n'].map((c) => slow.feed(Buffer.from(c)));
    expect(Buffer.concat(parts).toString()).toBe(
      'GET /v1/a HTTP/1.1\r\nx-keel-original-method: LIST\r\n\r\n',
    );
  });

  it('strips a marker a client sent itself', () => {
    expect(
      feedAll(['POST /v1/x HTTP/1.1\r\nX-Keel-Original-Method: LIST\r\nContent-Length: 0\r\n\r\n']),
    ).toBe('POST /v1/x HTTP/1.1\r\nContent-Length: 0\r\n\r\n');
  });

  it('leaves bodies alone, even when they contain a LIST request line', () => {
    const body = 'LIST /evil HTTP/1.1\r\n\r\n';
    const req = `POST /v1/a HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n${body}LIST /v1/b HTTP/1.1\r\n\r\n`;
    expect(feedAll([req])).toBe(
      `POST /v1/a HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n${body}GET /v1/b HTTP/1.1\r\nx-keel-original-method: LIST\r\n\r\n`,
    );
  });

  it('follows chunked bodies to the next request', () => {
    const req =
      'POST /v1/a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nLIST \r\n0\r\n\r\nLIST /v1/b HTTP/1.1\r\n\r\n';
    expect(feedAll([req])).toContain(
      '5\r\nLIST \r\n0\r\n\r\nGET /v1/b HTTP/1.1\r\nx-keel-original-method: LIST',
    );
  });

  it('gives the same bytes however the stream is split', () => {
    const body = '{"a":"LIST /x HTTP/1.1"}';
    const stream =
      'LIST /v1/pki/roles HTTP/1.1\r\nHost: x\r\n\r\n' +
      `PUT /v1/sys/policies/acl/p HTTP/1.1\r\nContent-Length: ${body.length}\r\n\r\n${body}` +
      'POST /v1/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n0\r\nTrailer: t\r\n\r\n' +
      'LIST /v1/aws/roles?list=true HTTP/1.1\r\n\r\n';
    const whole = feedAll([stream]);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 12 }),
        (cuts) => {
          const sorted = [...cuts].sort((a, b) => a - b);
          const chunks: string[] = [];
          let at = 0;
          for (const c of sorted) {
            chunks.push(stream.slice(at, c));
            at = c;
          }
          chunks.push(stream.slice(at));
          expect(feedAll(chunks)).toBe(whole);
        },
      ),
    );
    expect(whole.match(/x-keel-original-method: LIST/g)).toHaveLength(2);
  });
});
