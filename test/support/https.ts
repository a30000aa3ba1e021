import { request as httpsRequest } from 'node:https';

/** A GET over HTTPS trusting only `ca`; resolves with status and body, or rejects (TLS failure). */
export function httpsGet(
  url: string,
  ca: string | undefined,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca, headers }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
