import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The spellings a secret could rest in: clear, hex, and base64 / base64url at each of the three
 * alignments it can take inside a longer encoded value (its first and last partial groups,
 * which depend on the neighbouring bytes, are left out).
 */
export function secretForms(secret: string): string[] {
  const forms = new Set([secret, Buffer.from(secret).toString('hex')]);
  for (const encoding of ['base64', 'base64url'] as const) {
    for (let k = 0; k < 3; k++) {
      const text = Buffer.concat([Buffer.alloc(k), Buffer.from(secret)]).toString(encoding);
      forms.add(text.slice(k === 0 ? 0 : 4, -4));
    }
  }
  return [...forms];
}

/** Every file under a directory, recursively. */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    return entry.isDirectory() ? [path, ...filesUnder(path)] : [path];
  });
}

/** The `[file, form]` pairs where a form of a secret is found in a file under `dir`. */
export function findSecrets(dir: string, secrets: readonly string[]): [string, string][] {
  const found: [string, string][] = [];
  for (const file of filesUnder(dir)) {
    if (statSync(file).isDirectory()) continue;
    const bytes = readFileSync(file).toString('latin1');
    for (const secret of secrets)
      for (const form of secretForms(secret))
        if (bytes.includes(form)) found.push([file, `${form} (of ${secret.slice(0, 4)}…)`]);
  }
  return found;
}
