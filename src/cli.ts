import { parseArgs, type ParseArgsConfig } from 'node:util';
import { MACHINE_NAMES } from '../machines/names.js';
import type { AppDeps } from './app.js';
import type { Config } from './config.js';
import { CONFIG_FLAGS, ConfigError, loadConfig } from './config.js';

export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
}

/** What a command is handed: its parsed options and positionals, the configuration and output. */
export interface CommandCall {
  readonly config: Config;
  readonly options: Readonly<Record<string, string | boolean | undefined>>;
  readonly positionals: readonly string[];
  readonly io: CliIo;
  readonly deps: AppDeps;
  readonly say: (text: string) => void;
  readonly fail: (text: string) => number;
}

type Options = NonNullable<ParseArgsConfig['options']>;

interface Command {
  readonly summary: string;
  readonly usage: string;
  readonly options: Options;
  /** How many positionals the command takes, at least and at most. */
  readonly positionals: readonly [number, number];
  /** Loaded only when the command runs, so a read-only command never loads the whole app. */
  readonly run: (call: CommandCall) => Promise<number>;
}

/** Where the log is: the data directory, and the store if not its SQLite file (`--store`). */
const data: Options = { data: { type: 'string' }, store: { type: 'string' } };
const str = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

const COMMANDS: Readonly<Record<string, Command>> = {
  serve: {
    summary: 'run the daemon',
    usage: `keel serve [--data DIR] [--listen HOST:PORT] [--log-level L] [--sync full|normal]
           [--tls auto | --tls-cert FILE --tls-key FILE] [...]

Every setting in the README's configuration table is a flag here (--listen, --public-address,
--body-limit, --engine-bin, ...); flags win over KEEL_* environment variables. --workers N runs N
processes sharing the listener and the log, one of them leading reactors and timers.`,
    options: Object.fromEntries(CONFIG_FLAGS.map((f) => [f, str])),
    positionals: [0, 0],
    run: async (c) => (await import('./cli/serve.js')).serve(c),
  },
  replay: {
    summary: 'rebuild every read model from the log',
    usage: `keel replay [--data DIR] [--store URL] [--until TIME --into FILE]

Without --until: drops and rebuilds every read model of the data directory from its log.
With --until TIME --into FILE: builds the read models as of TIME into a new database file.`,
    options: { ...data, until: str, into: str },
    positionals: [0, 0],
    run: async (c) => (await import('./cli/log.js')).replay(c),
  },
  events: {
    summary: 'print events as JSON lines',
    usage: `keel events [--data DIR] [--store URL] [--stream S] [--type T] [--since TIME]
            [--limit N | --newest N] [--follow] [--full]

--limit N   the oldest N events that match
--newest N  the newest N events that match (printed oldest first)
--follow    keep printing new events as they are appended, until interrupted
--full      whole payloads; by default long values are summarised and sealed values shown as hmac:`,
    options: {
      ...data,
      stream: str,
      type: str,
      since: str,
      limit: str,
      newest: str,
      follow: flag,
      full: flag,
    },
    positionals: [0, 0],
    run: async (c) => (await import('./cli/log.js')).events(c),
  },
  audit: {
    summary: 'verify the keyed chain and its anchors, or sign its head for a witness',
    usage: `keel audit verify [--data DIR] [--store URL] [--witness FILE]
keel audit head [--data DIR] [--store URL]

verify  walk the keyed chain and check every anchor; exit 1 naming the first bad position
        --witness FILE  also check a head printed earlier by keel audit head
head    verify, then sign and print the current head (JSON) for a witness to keep`,
    options: { ...data, witness: str },
    positionals: [1, 1],
    run: async (c) => (await import('./cli/log.js')).audit(c),
  },
  copy: {
    summary: 'copy a whole log, chain intact, into an empty store',
    usage: `keel copy --from DIR|postgres://... --to DIR|postgres://... [--data DIR]

Copies the events with their hashes, the audit chain record and anchors, and the reactor
checkpoints into an empty store, verifying the chain on the source first and on the target before
the copy commits. Read models, schedule rows and the leadership lease are not copied: keel serve
builds them from the log when it first starts on the target. A directory keeps its own keyring
and audit head; a postgres:// end's are in --data (KEEL_DATA). Without KEEL_SEAL_KEY the source's
keyring is copied to a target that has none; a target holding another key is refused.`,
    options: { ...data, from: str, to: str },
    positionals: [0, 0],
    run: async (c) => (await import('./cli/copy.js')).copy(c),
  },
  diagram: {
    summary: 'draw a machine',
    usage: `keel diagram <machine> [--format mermaid|dot|svg] [--highlight STATE]

machines: ${MACHINE_NAMES.join(', ')}`,
    options: { format: str, highlight: str },
    positionals: [0, 1],
    run: async (c) => (await import('./cli/diagram.js')).diagram(c),
  },
  token: {
    summary: 'mint a token without HTTP (a lost bootstrap.json)',
    usage: `keel token runs [--data DIR] [--store URL] [--user NAME]
keel token secrets [--data DIR] [--store URL] (--policy P,... | --root) [--ttl 1h]

secrets  --policy P,...  a token with these policies and default, as auth/token/create makes it;
                         without --ttl it lives the token store's default (768h)
         --root          a root token, which never expires unless --ttl is given`,
    options: { ...data, user: str, policy: str, root: flag, ttl: str },
    positionals: [0, 1],
    run: async (c) => (await import('./cli/token.js')).token(c),
  },
};

const USAGE = `usage: keel <command> [options]

commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(9)} ${c.summary}`)
  .join('\n')}
  help      this text; keel help <command> (or keel <command> --help) for one command

every command but diagram takes --data DIR (default: data/, or KEEL_DATA)`;

const commandUsage = (c: Command) => `usage: ${c.usage}`;

/** The CLI: `keel <command> [options]`. Unknown commands, options and extra arguments are errors. */
export async function runCli(
  argv: readonly string[],
  io: CliIo,
  deps: AppDeps = {},
): Promise<number> {
  const say = (text: string) => io.stdout.write(`${text}\n`);
  const fail = (text: string) => {
    io.stderr.write(`keel: ${text}\n`);
    return 2;
  };
  const [name, ...args] = argv;
  if (name === undefined) {
    io.stderr.write(`${USAGE}\n`);
    return 2;
  }
  if (name === 'help' || name === '--help' || name === '-h') {
    const topic = args[0];
    if (topic === undefined) {
      say(USAGE);
      return 0;
    }
    const c = COMMANDS[topic];
    if (c === undefined || args.length > 1) return fail(`no help for ${args.join(' ')}\n${USAGE}`);
    say(commandUsage(c));
    return 0;
  }
  const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (command === undefined) return fail(`unknown command ${JSON.stringify(name)}\n${USAGE}`);
  if (args.includes('--help') || args.includes('-h')) {
    say(commandUsage(command));
    return 0;
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: [...args],
      options: command.options,
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    return fail(`${err instanceof Error ? err.message : String(err)}\n${commandUsage(command)}`);
  }
  const [least, most] = command.positionals;
  if (parsed.positionals.length < least || parsed.positionals.length > most) {
    const extra = parsed.positionals.slice(most);
    return fail(
      `${extra.length > 0 ? `unexpected argument ${JSON.stringify(extra.join(' '))}` : 'missing argument'}\n${commandUsage(command)}`,
    );
  }
  // No option is declared `multiple`, so every value is a string or a boolean.
  const options = Object.fromEntries(
    Object.entries(parsed.values).filter(
      (e): e is [string, string | boolean] => typeof e[1] !== 'object',
    ),
  );
  let config: Config;
  try {
    config = loadConfig(options, io.env);
  } catch (err) {
    if (err instanceof ConfigError) return fail(err.message);
    throw err;
  }
  try {
    return await command.run({
      config,
      options,
      positionals: parsed.positionals,
      io,
      deps,
      say,
      fail,
    });
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
}
