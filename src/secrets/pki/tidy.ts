import type { AuditMetadata } from '../../core/events.js';
import type { Authority } from './authority.js';
import { certificateDecider, configDecider } from './deciders.js';
import { rebuildAllCrls } from './crls.js';
import {
  streams,
  type AutoTidyConfig,
  type ConfigEvent,
  type TidyParams,
  type TidyResult,
} from './events.js';

/** A tidy that was started and has not finished yet (the `tidy-run` configuration row). */
export interface TidyRun extends TidyParams {
  startedAt: string;
  auto: boolean;
}

/** `config/auto-tidy` before it is written: off, every 12h, the manual tidy's defaults. */
export const DEFAULT_AUTO_TIDY: AutoTidyConfig = {
  enabled: false,
  interval_duration: 12 * 3600,
  safety_buffer: 72 * 3600,
  tidy_cert_store: false,
  tidy_revoked_certs: false,
};

export const runningTidy = (authority: Authority, mount: string): TidyRun | undefined =>
  authority.q.config<TidyRun>(mount, 'tidy-run');

export const autoTidyConfig = (authority: Authority, mount: string): AutoTidyConfig => ({
  ...DEFAULT_AUTO_TIDY,
  ...authority.q.config<AutoTidyConfig>(mount, 'auto-tidy'),
});

const record = (authority: Authority, mount: string, meta: AuditMetadata, event: ConfigEvent) =>
  authority.append(streams.config(mount), configDecider, () => [event], meta);

/**
 * Starts a tidy: a `PkiTidyStarted` event, whose projection puts a schedule row due at once. The
 * work happens off the request, when the scheduler fires that row (`runTidy`), so it survives a
 * restart in between. Returns false when one is already running.
 */
export function startTidy(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  params: TidyParams,
  auto: boolean,
): Promise<boolean> {
  return authority.run(() => beginTidy(authority, mount, meta, params, auto));
}

/** `startTidy` inside the command running now. */
function beginTidy(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  params: TidyParams,
  auto: boolean,
): boolean {
  if (runningTidy(authority, mount)) return false;
  const startedAt = authority.core.clock.now().toISOString();
  record(authority, mount, meta, {
    type: 'PkiTidyStarted',
    data: { mount, ...params, startedAt, auto },
  });
  return true;
}

/**
 * The tidy's work: deletes stored certificates (and revoked entries) expired for longer than the
 * safety buffer, rebuilds the CRLs if revoked entries went, and records the outcome
 * (`PkiTidied`), all in one transaction. Nothing when no tidy is running (it was cancelled).
 */
export function runTidy(authority: Authority, mount: string, meta: AuditMetadata): Promise<void> {
  return authority.run(() => {
    const run = runningTidy(authority, mount);
    if (!run) return;
    const cutoff = new Date(
      authority.core.clock.now().getTime() - run.safetyBuffer * 1000,
    ).toISOString();
    let certStoreDeleted = 0;
    let revokedCertDeleted = 0;
    authority.atomically(() => {
      for (const row of authority.q.expiredBefore(mount, cutoff)) {
        const isRevoked = row.revoked_at !== null;
        if (isRevoked ? !run.tidyRevokedCerts : !run.tidyCertStore) continue;
        authority.append(
          streams.cert(mount, row.serial),
          certificateDecider,
          () => [{ type: 'CertificateDeleted' as const, data: { mount, serial: row.serial } }],
          meta,
        );
        if (isRevoked) revokedCertDeleted++;
        else certStoreDeleted++;
      }
      if (run.tidyRevokedCerts) rebuildAllCrls(authority, mount, meta);
      finish(authority, mount, meta, run, {
        certStoreDeleted,
        revokedCertDeleted,
        state: 'Finished',
      });
    });
  });
}

/** Records how a run ended (`PkiTidied`), which frees the mount for the next tidy. */
function finish(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  run: TidyRun,
  outcome: Pick<TidyResult, 'certStoreDeleted' | 'revokedCertDeleted' | 'state'>,
): void {
  record(authority, mount, meta, {
    type: 'PkiTidied',
    data: {
      mount,
      safetyBuffer: run.safetyBuffer,
      tidyCertStore: run.tidyCertStore,
      tidyRevokedCerts: run.tidyRevokedCerts,
      startedAt: run.startedAt,
      finishedAt: authority.core.clock.now().toISOString(),
      ...outcome,
    },
  });
}

/** `tidy-cancel`: a running tidy ends as Cancelled before its work; false when none runs. */
export function cancelTidy(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
): Promise<boolean> {
  return authority.run(() => {
    const run = runningTidy(authority, mount);
    if (!run) return false;
    finish(authority, mount, meta, run, {
      certStoreDeleted: 0,
      revokedCertDeleted: 0,
      state: 'Cancelled',
    });
    return true;
  });
}

/**
 * `config/auto-tidy`: `change` makes the new configuration from the one in force when the command
 * runs; the projection moves the auto-tidy schedule row. Answers what was recorded.
 */
export function configureAutoTidy(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
  change: (current: AutoTidyConfig) => AutoTidyConfig,
): Promise<AutoTidyConfig> {
  return authority.run(() => {
    const config = change(autoTidyConfig(authority, mount));
    record(authority, mount, meta, { type: 'PkiAutoTidyConfigured', data: { mount, config } });
    return config;
  });
}

/** The auto-tidy timer: starts a tidy with the auto-tidy configuration's operations. */
export function startAutoTidy(
  authority: Authority,
  mount: string,
  meta: AuditMetadata,
): Promise<void> {
  return authority.run(() => {
    const c = autoTidyConfig(authority, mount);
    if (!c.enabled) return;
    beginTidy(
      authority,
      mount,
      meta,
      {
        safetyBuffer: c.safety_buffer,
        tidyCertStore: c.tidy_cert_store,
        tidyRevokedCerts: c.tidy_revoked_certs,
      },
      true,
    );
  });
}

/** `tidy-status` as the reference shows it. */
export function tidyStatusView(authority: Authority, mount: string): Record<string, unknown> {
  const run = runningTidy(authority, mount);
  if (run)
    return {
      state: 'Running',
      error: null,
      time_started: run.startedAt,
      time_finished: null,
      safety_buffer: run.safetyBuffer,
      tidy_cert_store: run.tidyCertStore,
      tidy_revoked_certs: run.tidyRevokedCerts,
      cert_store_deleted_count: 0,
      revoked_cert_deleted_count: 0,
      message: 'Tidying certificate store',
    };
  const s = authority.q.config<TidyResult>(mount, 'tidy');
  if (!s)
    return {
      state: 'Inactive',
      error: null,
      time_started: null,
      time_finished: null,
      cert_store_deleted_count: 0,
      revoked_cert_deleted_count: 0,
      message: '',
    };
  const cancelled = s.state === 'Cancelled';
  return {
    state: cancelled ? 'Cancelled' : 'Finished',
    error: cancelled ? 'tidy operation cancelled' : null,
    time_started: s.startedAt,
    time_finished: s.finishedAt,
    safety_buffer: s.safetyBuffer,
    tidy_cert_store: s.tidyCertStore,
    tidy_revoked_certs: s.tidyRevokedCerts,
    cert_store_deleted_count: s.certStoreDeleted,
    revoked_cert_deleted_count: s.revokedCertDeleted,
    message: cancelled ? 'Tidy operation cancelled' : 'Tidy operation successfully completed',
  };
}
