import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { resolve, sep } from 'node:path';

/**
 * The processes a killed Keel left running in its scratch directories: a command engine's
 * terraform (and the provider plugins it started, which share its directory) outlives a daemon or
 * worker killed mid-phase. An apply left so would go on changing infrastructure while Keel, taking
 * its phase over, has already errored it and may start the next run's. So whoever takes over a
 * scratch directory (the next daemon on the data directory, the primary replacing a worker) stops
 * them first, by SIGKILL.
 *
 * A process is found by its working directory (Linux's `/proc/<pid>/cwd`): every phase runs in a
 * directory of its own under the scratch directory, which is the data directory's owner's alone.
 * Where `/proc` cannot be read, nothing is found.
 */
export function stopProcessesIn(dir: string): number[] {
  let root: string;
  try {
    root = realpathSync(dir);
  } catch {
    root = resolve(dir);
  }
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const stopped: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    let cwd: string;
    try {
      // A directory removed under the process reads as `<path> (deleted)`.
      cwd = readlinkSync(`/proc/${entry}/cwd`).replace(/ \(deleted\)$/, '');
    } catch {
      continue; // gone meanwhile, or another user's
    }
    if (cwd !== root && !cwd.startsWith(`${root}${sep}`)) continue;
    try {
      process.kill(pid, 'SIGKILL');
      stopped.push(pid);
    } catch {
      // It ended meanwhile.
    }
  }
  return stopped;
}
