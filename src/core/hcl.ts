import { parse } from '@cdktf/hcl2json';

/**
 * HCL to JSON, the one place Keel parses HCL (ACL policies, terraform configurations). It wraps
 * `@cdktf/hcl2json`, a WASM build of the Go HCL library terraform itself uses; ADR 0011 says why it
 * stays after its project was archived and what replaces it. Blocks become arrays of objects,
 * expressions stay unevaluated as `"${…}"` strings, and a syntax error rejects with the HCL
 * diagnostic (`name:line,col-col: …`). `test/unit/core/hcl.test.ts` pins each of these.
 */
export async function parseHcl(fileName: string, text: string): Promise<Record<string, unknown>> {
  return (await parse(fileName, text)) as Record<string, unknown>;
}
