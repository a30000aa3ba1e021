import { machineDecider } from '../../core/machine-decider.js';
import { runMachine } from '../../../machines/run.machine.js';

/** The run stream's decider: the run machine is both the fold and the guard. */
export const runDecider = machineDecider(runMachine);
