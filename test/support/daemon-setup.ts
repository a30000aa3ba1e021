import type { TestProject } from 'vitest/node';
import { buildDaemon } from './daemon-build.js';

/**
 * Global setup of every project that spawns daemons or CLI runs: Keel compiled once for the run
 * (ADR 0093), removed at its end.
 */
export default function setup(project: TestProject): () => void {
  const build = buildDaemon();
  project.provide('keelDaemonBuild', build.dir);
  return () => build.remove();
}
