import { readFileSync } from 'node:fs';

/** Whether a process runs, as the kernel's /proc says: a zombie (killed, not yet reaped) does not. */
export function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
