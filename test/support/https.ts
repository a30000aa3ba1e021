import { request as httpsRequest } from 'node:https';

export interface HttpsAnswer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

/** A request over HTTPS trusting only `ca`; resolves with the answer, or rejects (TLS failure). */
export function httpsCall(
  method: string,
  url: string,
  ca: string | undefined,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { method, ca, headers: options.headers ?? {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A GET over HTTPS trusting only `ca`. */
export const httpsGet = (
  url: string,
  ca: string | undefined,
  headers: Record<string, string> = {},
) => httpsCall('GET', url, ca, { headers });
