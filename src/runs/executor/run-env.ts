import { readFileSync } from 'node:fs';
import type { Core } from '../../context.js';
import { listenerNames, listenerTrust } from '../../http/listener-tls.js';
import type { RunsModel } from '../model.js';
import type { PhaseEnvironment } from './driver.js';
import { issueRunToken } from './run-token.js';
import type { Phase, PhaseRun } from './service.js';

/**
 * The name of the `TF_TOKEN_…` variable terraform reads a host's token from: dots as `_`, hyphens
 * as `__`, a port kept after its colon (terraform's host names may carry one).
 */
export const tokenVariable = (host: string): string =>
  `TF_TOKEN_${host.replace(/-/g, '__').replace(/\./g, '_')}`;

/**
 * The host names terraform may reach Keel by (each name the listener answers as, with the public
 * address's port when it has one): each gets the run token. IPv6 literals have no variable form.
 */
export function keelHosts(core: Core): string[] {
  const url = new URL(core.config.publicAddress);
  const names = listenerNames(core.config.publicAddress, core.config.listen.host)
    .map((n) => n.value)
    .filter((n) => !n.includes(':'));
  return [...new Set(names)].map((n) => (url.port === '' ? n : `${n}:${url.port}`));
}

/** Where Go looks for the system's CA bundle on Linux, in its order (crypto/x509). */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/pki/tls/cacert.pem',
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/** The system's CA bundle (the daemon's own SSL_CERT_FILE first), or '' when there is none. */
function systemBundle(): string {
  const files = [process.env.SSL_CERT_FILE, ...SYSTEM_BUNDLES].filter(
    (f): f is string => f !== undefined && f !== '',
  );
  for (const file of files) {
    try {
      return readFileSync(file, 'utf8');
    } catch {
      // Not here: the next place.
    }
  }
  return '';
}

/**
 * A phase's environment as HCP Terraform gives each run's plan and apply: `TFC_RUN_ID`,
 * `TFC_WORKSPACE_NAME`, `TFC_WORKSPACE_SLUG` (organization/workspace), `TFC_PROJECT_NAME`; a token
 * for Keel itself (`ATLAS_TOKEN`, and `TF_TOKEN_<host>` for each name of Keel's listener) that
 * only reads state shared with the run's workspace and ends with the phase (run-token.ts); and,
 * when Keel's listener speaks TLS, a CA bundle of the system's roots and the listener's CA, so
 * terraform trusts Keel's own certificate. Keel's configuration versions come from uploads, with
 * no VCS ingress attributes, so no `TFC_CONFIGURATION_VERSION_GIT_*` variable is ever set.
 */
export function phaseEnvironment(
  core: Core,
  model: RunsModel,
  run: PhaseRun,
  phase: Phase,
  lifetimeMs: number,
): PhaseEnvironment {
  const ws = model.workspaces.get(run.workspaceId);
  if (ws === null) throw new Error(`workspace ${run.workspaceId} not found`);
  const project = model.projects.get(ws.projectId);
  const token = issueRunToken(core, {
    run: run.id,
    phase,
    exp: core.clock.now().getTime() + lifetimeMs,
  });
  const variables: Record<string, string> = {
    TFC_RUN_ID: run.id,
    TFC_WORKSPACE_NAME: ws.name,
    TFC_WORKSPACE_SLUG: `${ws.organization}/${ws.name}`,
    ...(project === null ? {} : { TFC_PROJECT_NAME: project.name }),
    ATLAS_TOKEN: token,
  };
  for (const host of keelHosts(core)) variables[tokenVariable(host)] = token;
  const listener = listenerTrust(core.config);
  const ca = listener === null ? [] : listener().ca;
  const trust = ca.length === 0 ? null : `${systemBundle().trimEnd()}\n${ca.join('\n')}\n`;
  return { variables, trust, secrets: [token] };
}
