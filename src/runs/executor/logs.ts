import { appendFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The log of a phase while it runs. Lines are appended as the driver produces them, so a client
 * reading the log address sees progress, and a restart finds what was written before the crash.
 * When the phase ends its whole log moves into the event that records the outcome.
 */
export interface LiveLogs {
  append(phaseId: string, line: string): void;
  /** The text so far, or null when no phase with this id is live. */
  read(phaseId: string): string | null;
  /** Drops the live copy once the outcome (with the log) is in the event log. */
  discard(phaseId: string): void;
}

const safeName = (phaseId: string): string => {
  if (!/^[A-Za-z0-9_-]+$/.test(phaseId))
    throw new Error(`invalid phase id ${JSON.stringify(phaseId)}`);
  return `${phaseId}.log`;
};

/** Live logs as files under `dir` (one per phase), surviving a restart of the daemon. */
export function fileLiveLogs(dir: string): LiveLogs {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return {
    append(phaseId, line) {
      appendFileSync(join(dir, safeName(phaseId)), `${line}\n`, { mode: 0o600 });
    },
    read(phaseId) {
      try {
        return readFileSync(join(dir, safeName(phaseId)), 'utf8');
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw error;
      }
    },
    discard(phaseId) {
      rmSync(join(dir, safeName(phaseId)), { force: true });
    },
  };
}

/** Live logs in memory, for an in-memory daemon (tests, `--data :memory:`). */
export function memoryLiveLogs(): LiveLogs {
  const logs = new Map<string, string>();
  return {
    append: (phaseId, line) => logs.set(phaseId, `${logs.get(phaseId) ?? ''}${line}\n`),
    read: (phaseId) => logs.get(phaseId) ?? null,
    discard: (phaseId) => logs.delete(phaseId),
  };
}
