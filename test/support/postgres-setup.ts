import type { TestProject } from 'vitest/node';
import { startCluster } from './postgres.js';

/** Global setup of the `integration-pg` project: one throwaway cluster for the whole run. */
export default function setup(project: TestProject): () => void {
  const cluster = startCluster();
  project.provide('keelPgSocket', cluster.socketDir);
  return () => cluster.stop();
}
