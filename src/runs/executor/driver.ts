import type {
  ApplyCounts,
  LogSink,
  PlanCounts,
  PlanJson,
  RunFlags,
  RunVariable,
  StateV4,
  WorkspaceVariable,
} from './types.js';

/** What a plan phase is given. */
export interface PlanRequest {
  /** The configuration version's upload: a `.tar.gz` whose root is the configuration directory. */
  configuration: Buffer;
  workspaceVariables: readonly WorkspaceVariable[];
  runVariables: readonly RunVariable[];
  /** The workspace's current state, or null when it has none yet. */
  state: StateV4 | null;
  flags: RunFlags;
  log: LogSink;
  /** What the command engine adds to each command's environment (run-env.ts); none by default. */
  environment?: PhaseEnvironment;
}

/** What a phase is given besides its configuration, variables and state (the command engine). */
export interface PhaseEnvironment {
  /** Environment variables of every command the phase runs (workspace env variables override). */
  variables: Readonly<Record<string, string>>;
  /** PEM certificates terraform trusts (the system's and Keel's listener CA), or null: the system's. */
  trust: string | null;
  /** Values that never reach a log or a plan (the run token). */
  secrets: readonly string[];
}

/** What an apply phase is given: the plan request plus the artifact its plan produced. */
export interface ApplyRequest extends PlanRequest {
  artifact: Buffer;
}

/** A phase ends finished, errored (the message is already in the log) or canceled. */
export type PlanResult =
  | { status: 'finished'; plan: PlanJson; counts: PlanCounts; artifact: Buffer }
  | { status: 'errored'; message: string }
  | { status: 'canceled' };

export type ApplyResult =
  | { status: 'finished'; state: StateV4; counts: ApplyCounts }
  | { status: 'errored'; message: string; state?: StateV4 }
  | { status: 'canceled'; state?: StateV4 };

/** A running phase: its result, and the two ways to stop it. */
export interface Execution<R> {
  result: Promise<R>;
  /** A graceful stop (SIGINT for a process): the phase ends as soon as it safely can. */
  interrupt(): void;
  /** An immediate stop (SIGKILL for a process): in-flight work may be lost. */
  kill(): void;
}

/** A way of executing plans and applies. */
export interface Driver {
  readonly name: 'builtin' | 'command';
  plan(request: PlanRequest): Execution<PlanResult>;
  apply(request: ApplyRequest): Execution<ApplyResult>;
}

/** Wording terraform prints when interrupted, reused so both drivers read the same. */
export const INTERRUPT_LINES = [
  'Interrupt received.',
  'Please wait for Terraform to exit or data loss may occur.',
  'Gracefully shutting down...',
] as const;
