import { readConfigurationText } from '../archive.js';
import { INTERRUPT_LINES } from '../driver.js';
import type {
  ApplyRequest,
  ApplyResult,
  Driver,
  Execution,
  PlanRequest,
  PlanResult,
} from '../driver.js';
import type { LogSink } from '../types.js';
import { applyPlan } from './apply.js';
import type { ApplyIdentity, BuiltinArtifact } from './apply.js';
import { ConfigurationError, loadConfiguration, refuseTypedNulls, unsupported } from './config.js';
import { EvaluationError } from './expressions.js';
import { planModel } from './plan.js';
import { planJson } from './plan-json.js';
import { planCounts, planLog } from './render.js';
import { fileVariables, resolveVariables } from './variables.js';
import { decodeState, encodeState } from './schemas.js';

export type { ApplyIdentity, BuiltinArtifact } from './apply.js';

/** Turns a configuration problem into terraform's `Error:` block; anything else is rethrown. */
function failure(error: unknown, log: LogSink): { status: 'errored'; message: string } {
  if (error instanceof ConfigurationError || error instanceof EvaluationError) {
    log('');
    log(`Error: ${error.summary}`);
    if (error.detail) {
      log('');
      log(error.detail);
    }
    return { status: 'errored', message: error.message };
  }
  throw error;
}

/**
 * Runs a phase body with cooperative interruption: the body checks `stopped()` between steps,
 * and an interrupt or kill turns the result into `canceled`.
 */
function cooperative<R>(
  log: LogSink,
  body: (stopped: () => boolean) => Promise<R | { status: 'canceled' }>,
): Execution<R | { status: 'canceled' }> {
  let stopped = false;
  const stop = (graceful: boolean) => {
    if (stopped) return;
    stopped = true;
    if (graceful) for (const line of INTERRUPT_LINES) log(line);
  };
  return { result: body(() => stopped), interrupt: () => stop(true), kill: () => stop(false) };
}

/**
 * The default driver: parses the configuration with a real HCL parser and diffs it against the
 * workspace's state, offline and deterministically. Computed values come from `identity`.
 */
export function builtinDriver(identity: ApplyIdentity): Driver {
  return {
    name: 'builtin',
    plan(request: PlanRequest): Execution<PlanResult> {
      return cooperative(request.log, async (stopped) => {
        try {
          if (request.flags.debuggingMode)
            throw unsupported(
              "debugging-mode (terraform's TRACE log: the builtin engine runs no terraform to trace)",
              'the run',
            );
          const files = await readConfigurationText(request.configuration);
          const model = await loadConfiguration(files);
          const resolved = await resolveVariables(
            model.variables,
            request.workspaceVariables,
            request.runVariables,
            await fileVariables(files),
          );
          refuseTypedNulls(model, resolved.values);
          if (stopped()) return { status: 'canceled' };
          const state = decodeState(request.state);
          const planned = planModel(model, resolved.values, state, request.flags);
          planned.warnings.unshift(...resolved.warnings);
          const configured = new Set(
            planned.instances.filter((i) => i.action !== 'delete').map((i) => i.address),
          );
          for (const line of planLog(planned, state, request.flags, configured)) request.log(line);
          const artifact: BuiltinArtifact = {
            kind: 'keel-builtin-plan',
            version: 1,
            model,
            variables: resolved.values,
            flags: request.flags,
            instances: planned.instances.map((i) => ({
              address: i.address,
              type: i.type,
              name: i.name,
              ...(i.index === undefined ? {} : { index: i.index }),
              action: i.action,
              ...(i.importId === undefined ? {} : { importId: i.importId }),
            })),
            prior: state ? { serial: state.serial, lineage: state.lineage } : null,
          };
          return {
            status: 'finished',
            plan: planJson(
              planned,
              resolved.values,
              state,
              request.flags,
              Object.values(model.variables),
            ),
            counts: planCounts(planned),
            artifact: Buffer.from(JSON.stringify(artifact)),
          };
        } catch (error) {
          return failure(error, request.log);
        }
      });
    },
    apply(request: ApplyRequest): Execution<ApplyResult> {
      return cooperative(request.log, async (stopped) => {
        try {
          const artifact = JSON.parse(request.artifact.toString('utf8')) as BuiltinArtifact;
          if (artifact.kind !== 'keel-builtin-plan' || artifact.version !== 1) {
            throw new ConfigurationError(
              'Invalid plan file',
              'the plan was not produced by the builtin driver',
            );
          }
          if (stopped()) return { status: 'canceled' };
          const result = applyPlan(artifact, decodeState(request.state), identity);
          for (const line of result.log) request.log(line);
          return { status: 'finished', state: encodeState(result.state), counts: result.counts };
        } catch (error) {
          return failure(error, request.log);
        }
      });
    },
  };
}
