import { spawn } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { startDaemon, type RunningDaemon } from './daemon.js';
import { httpsCall } from './https.js';

/** The real terraform CLI the interop tests drive (`TERRAFORM_BIN`, default /usr/local/bin/terraform). */
export const TERRAFORM_BIN = process.env.TERRAFORM_BIN ?? '/usr/local/bin/terraform';

/** Fails loudly (never skips) when the binary is not there. */
export function requireTerraform(): string {
  try {
    accessSync(TERRAFORM_BIN, constants.X_OK);
  } catch {
    throw new Error(
      `the terraform CLI is missing: no executable at ${TERRAFORM_BIN} (set TERRAFORM_BIN, or install terraform 1.11)`,
    );
  }
  return TERRAFORM_BIN;
}

/** The real daemon over TLS (`--tls auto`), as terraform sees it. */
export interface TerraformHost {
  daemon: RunningDaemon;
  /** What terraform names the host: `localhost:PORT` (the listener certificate covers it). */
  hostname: string;
  /** `https://localhost:PORT` */
  url: string;
  /** `<data>/tls/ca.pem`, for SSL_CERT_FILE. */
  caFile: string;
  /** The bootstrap user's runs token. */
  token: string;
  /** An `/api/v2` call with the bootstrap token (or another), trusting the listener CA. */
  api(
    method: string,
    path: string,
    body?: unknown,
    token?: string,
  ): Promise<{ status: number; json: unknown; text: string }>;
  /** Create an organization owned by the bootstrap user. */
  organization(name: string): Promise<void>;
  stop(): Promise<number | null>;
}

export async function startTerraformHost(
  options: { env?: Record<string, string>; args?: string[] } = {},
): Promise<TerraformHost> {
  requireTerraform();
  const daemon = await startDaemon({
    // The CLI polls (runs, logs, the queue) many times a second per token; these tests are about
    // what it calls, not about rate limits, so the limits sit well above what they reach.
    args: [
      '--tls',
      'auto',
      '--rate-limit-per-second',
      '1000',
      '--rate-limit-run-lists-per-minute',
      '6000',
      ...(options.args ?? []),
    ],
    env: options.env,
  });
  const port = new URL(daemon.url).port;
  const hostname = `localhost:${port}`;
  const url = `https://${hostname}`;
  const caFile = join(daemon.dataDir, 'tls', 'ca.pem');
  const ca = readFileSync(caFile, 'utf8');
  const token = daemon.bootstrap().runs.user_token;
  const api: TerraformHost['api'] = async (method, path, body, as = token) => {
    const res = await httpsCall(method, `${url}/api/v2${path}`, ca, {
      headers: {
        authorization: `Bearer ${as}`,
        ...(body === undefined ? {} : { 'content-type': 'application/vnd.api+json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    let json: unknown;
    try {
      json = res.body === '' ? undefined : JSON.parse(res.body);
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text: res.body };
  };
  return {
    daemon,
    hostname,
    url,
    caFile,
    token,
    api,
    async organization(name) {
      const res = await api('POST', '/organizations', {
        data: { type: 'organizations', attributes: { name, email: `owners@${name}.example` } },
      });
      if (res.status !== 201)
        throw new Error(`creating organization ${name}: ${res.status} ${res.text}`);
    },
    stop: () => daemon.stop(),
  };
}

/**
 * One TLS daemon for a test file: started before its tests, stopped after them. The returned
 * function gives the host inside a test; without the terraform binary it throws, so every test
 * FAILS (a failing `beforeAll` would only mark them skipped).
 */
export function useTerraformHost(
  setup: (host: TerraformHost) => Promise<void> = async () => undefined,
  options: Parameters<typeof startTerraformHost>[0] = {},
): () => TerraformHost {
  let host: TerraformHost | undefined;
  let missing: Error | undefined;
  beforeAll(async () => {
    try {
      requireTerraform();
    } catch (err) {
      missing = err instanceof Error ? err : new Error(String(err));
      return;
    }
    host = await startTerraformHost(options);
    await setup(host);
  });
  afterAll(async () => {
    await host?.stop();
  });
  return () => {
    if (missing !== undefined) throw missing;
    if (host === undefined) throw new Error('the terraform host did not start');
    return host;
  };
}

/** A `terraform { cloud { … } }` block naming the host, organization and workspace. */
export const cloudBlock = (
  host: TerraformHost,
  organization: string,
  workspace: string,
) => `terraform {
  cloud {
    hostname     = "${host.hostname}"
    organization = "${organization}"
    workspaces {
      name = "${workspace}"
    }
  }
}
`;

/** A `terraform { backend "remote" { … } }` block. */
export const remoteBackendBlock = (
  host: TerraformHost,
  organization: string,
  workspace: string,
) => `terraform {
  backend "remote" {
    hostname     = "${host.hostname}"
    organization = "${organization}"
    workspaces {
      name = "${workspace}"
    }
  }
}
`;

export interface TerraformResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunningTerraform {
  /** Everything printed so far (stdout and stderr). */
  output(): string;
  /** `running`, `exited <code>` or `killed by <signal>`. */
  status(): string;
  /** Write a line to terraform's stdin (answers to its prompts). */
  answer(line: string): void;
  /** Close terraform's stdin: a prompt then reads end of input. */
  endInput(): void;
  /** Wait until the output matches, or fail after `timeoutMs` (the process keeps running). */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  done: Promise<TerraformResult>;
  kill(): void;
}

/**
 * A working directory for terraform with its own HOME (so `terraform login` writes its credentials
 * there), a CLI configuration file and the environment every run gets: SSL_CERT_FILE (the
 * listener CA), TF_CLI_CONFIG_FILE, TF_IN_AUTOMATION=1, no update checks, and an `xdg-open` that
 * only records the address terraform wants opened (no real browser starts).
 */
export class TerraformWorkdir {
  readonly root = mkdtempSync(join(tmpdir(), 'keel-terraform-'));
  readonly dir = join(this.root, 'work');
  readonly home = join(this.root, 'home');
  readonly configFile = join(this.root, 'cli.tfrc');
  readonly openedFile = join(this.root, 'opened-url');
  readonly #bin = join(this.root, 'bin');

  constructor(
    readonly host: TerraformHost,
    options: { credentials?: boolean; files?: Record<string, string> } = {},
  ) {
    // `terraform login` writes `~/.terraform.d/credentials.tfrc.json` but does not make the folder.
    for (const d of [this.dir, join(this.home, '.terraform.d'), this.#bin])
      mkdirSync(d, { recursive: true });
    writeFileSync(
      this.configFile,
      options.credentials === false
        ? ''
        : `credentials "${host.hostname}" {\n  token = "${host.token}"\n}\n`,
      { mode: 0o600 },
    );
    const opener = join(this.#bin, 'xdg-open');
    writeFileSync(opener, `#!/bin/sh\nprintf '%s' "$1" > '${this.openedFile}'\n`);
    chmodSync(opener, 0o755);
    for (const [name, text] of Object.entries(options.files ?? {})) this.write(name, text);
  }

  write(name: string, text: string): void {
    writeFileSync(join(this.dir, name), text);
  }

  env(): Record<string, string> {
    return {
      PATH: `${this.#bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      HOME: this.home,
      SSL_CERT_FILE: this.host.caFile,
      TF_CLI_CONFIG_FILE: this.configFile,
      TF_IN_AUTOMATION: '1',
      CHECKPOINT_DISABLE: '1',
    };
  }

  /** Start terraform with `args`; answer prompts through the returned handle. */
  start(args: string[], options: { env?: Record<string, string> } = {}): RunningTerraform {
    const child = spawn(requireTerraform(), args, {
      cwd: this.dir,
      env: { ...this.env(), ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const waiters = new Set<() => void>();
    const changed = () => {
      for (const w of waiters) w();
    };
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      changed();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      changed();
    });
    const done = new Promise<TerraformResult>((resolve) =>
      child.once('close', (code) => {
        resolve({ code, stdout, stderr });
        changed();
      }),
    );
    const output = () => `${stdout}${stderr}`;
    return {
      output,
      status: () =>
        child.exitCode !== null
          ? `exited ${child.exitCode}`
          : child.signalCode !== null
            ? `killed by ${child.signalCode}`
            : 'running',
      answer: (line) => child.stdin.write(`${line}\n`),
      endInput: () => child.stdin.end(),
      done,
      kill: () => child.kill('SIGKILL'),
      waitFor: (pattern, timeoutMs = 30_000) =>
        new Promise((resolve, reject) => {
          const check = () => {
            const m = pattern.exec(output());
            if (m !== null) {
              finish();
              resolve(m);
            } else if (child.exitCode !== null) {
              finish();
              reject(
                new Error(`terraform exited (${child.exitCode}) before ${pattern}:\n${output()}`),
              );
            }
          };
          const timer = setTimeout(() => {
            finish();
            reject(new Error(`no ${pattern} from terraform in ${timeoutMs} ms:\n${output()}`));
          }, timeoutMs);
          const finish = () => {
            clearTimeout(timer);
            waiters.delete(check);
          };
          waiters.add(check);
          check();
        }),
    };
  }

  /** Run terraform to completion (stdin closed), failing after `timeoutMs`. */
  async run(args: string[], options: { env?: Record<string, string>; timeoutMs?: number } = {}) {
    const running = this.start(args, options);
    running.endInput();
    const timer = setTimeout(() => running.kill(), options.timeoutMs ?? 120_000);
    try {
      return await running.done;
    } finally {
      clearTimeout(timer);
    }
  }
}
