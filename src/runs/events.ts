import { streamName } from '../core/streams.js';
import type { ResourceCounts, RunEventOf, RunEventType } from '../../machines/run.machine.js';
import type { Sealed } from '../core/seal.js';

/**
 * The runs context's domain events, past tense, named after their aggregate. Run and
 * configuration-version events are also their machines' events (see `machines/`), so the data of
 * each carries at least what the machine's guards read.
 */

/** Who asked: a user, a team (team token) or an organization (organization token). */
export interface Requester {
  kind: 'user' | 'team' | 'organization';
  id: string;
}

// ---- organizations ---------------------------------------------------------------------------

export type OrganizationCreated = {
  type: 'OrganizationCreated';
  data: { name: string; email: string; ownersTeamId: string; createdBy: string | null };
};

/** Workspace access a team can hold; each level includes the ones before it. */
export type TeamAccessLevel = 'read' | 'plan' | 'write' | 'admin' | 'custom';

/** The reference's `custom` workspace permissions, each set on its own. */
export interface CustomPermissions {
  runs: 'read' | 'plan' | 'apply';
  variables: 'none' | 'read' | 'write';
  stateVersions: 'none' | 'read-outputs' | 'read' | 'write';
  sentinelMocks: 'none' | 'read';
  workspaceLocking: boolean;
  runTasks: boolean;
}

export type TeamCreated = {
  type: 'TeamCreated';
  data: { id: string; organization: string; name: string; owners: boolean };
};
export type TeamMemberAdded = { type: 'TeamMemberAdded'; data: { teamId: string; userId: string } };
export type TeamAccessGranted = {
  type: 'TeamAccessGranted';
  data: {
    id: string;
    teamId: string;
    workspaceId: string;
    access: TeamAccessLevel;
    /** With `custom` only. */
    custom?: CustomPermissions;
  };
};
export type TeamAccessChanged = {
  type: 'TeamAccessChanged';
  data: { id: string; access: TeamAccessLevel; custom?: CustomPermissions };
};
export type TeamAccessRevoked = { type: 'TeamAccessRevoked'; data: { id: string } };
/**
 * A user made a member of an organization (`/organizations/:org/organization-memberships`), and
 * added to the teams named. A user added to a team becomes a member too, without this event; the
 * membership's id is the same either way ({@link membershipId}).
 */
export type OrganizationMembershipCreated = {
  type: 'OrganizationMembershipCreated';
  data: { id: string; organization: string; userId: string; teamIds: string[] };
};
/** A user removed from an organization, and so from every team of it. */
export type OrganizationMembershipDeleted = {
  type: 'OrganizationMembershipDeleted';
  data: { id: string; organization: string; userId: string };
};
/** An organization's settings changed (`PATCH /organizations/:name`). */
export type OrganizationUpdated = {
  type: 'OrganizationUpdated';
  data: { name: string; costEstimationEnabled: boolean };
};

/** An organization's stream is named after it; its teams' and grants' streams are their ids. */
export const organizationStream = streamName`org-${'name'}`;

export type OrganizationEvent =
  | OrganizationCreated
  | TeamCreated
  | TeamMemberAdded
  | TeamAccessGranted
  | TeamAccessChanged
  | TeamAccessRevoked
  | OrganizationMembershipCreated
  | OrganizationMembershipDeleted
  | OrganizationUpdated;

// ---- projects --------------------------------------------------------------------------------

/**
 * A project of an organization. Every organization also has its default project, which no event
 * creates: it exists from `OrganizationCreated` on, under `defaultProjectId(organization)`.
 */
export type ProjectCreated = {
  type: 'ProjectCreated';
  data: { id: string; organization: string; name: string; description: string | null };
};
export type ProjectUpdated = {
  type: 'ProjectUpdated';
  data: { id: string; name?: string; description?: string | null };
};
export type ProjectDeleted = { type: 'ProjectDeleted'; data: { id: string } };

export type ProjectEvent = ProjectCreated | ProjectUpdated | ProjectDeleted;

// ---- workspaces ------------------------------------------------------------------------------

export type WorkspaceCreated = {
  type: 'WorkspaceCreated';
  data: {
    id: string;
    organization: string;
    name: string;
    autoApply: boolean;
    description: string | null;
    /** `builtin` or a configured engine's name; absent: the daemon's default. */
    executionEngine?: string;
    /** The terraform version the workspace asks for (`latest` when absent). */
    terraformVersion?: string;
    /** Where operations run: on Keel (`remote`, when absent) or on the client (`local`). */
    executionMode?: ExecutionMode;
    tags?: string[];
    tagBindings?: TagBinding[];
    /** The project it belongs to; absent in older events: the organization's default project. */
    projectId?: string;
    /** Whether runs a run trigger queues apply on their own (absent: no). */
    autoApplyRunTrigger?: boolean;
    /** The other settings given (absent ones take the reference's defaults). */
    settings?: Partial<WorkspaceSettings>;
  };
};
export type ExecutionMode = 'remote' | 'local';
/**
 * Workspace settings Keel stores and reports as given. Those about VCS-driven runs have no effect
 * (Keel starts no run from a VCS); `allowDestroyPlan` refuses destroy runs; `workingDirectory` is
 * only ever empty (a subdirectory is refused at the API).
 */
export interface WorkspaceSettings {
  allowDestroyPlan: boolean;
  globalRemoteState: boolean;
  speculativeEnabled: boolean;
  queueAllRuns: boolean;
  fileTriggersEnabled: boolean;
  triggerPrefixes: string[];
  triggerPatterns: string[];
  structuredRunOutputEnabled: boolean;
  sourceName: string | null;
  sourceUrl: string | null;
  workingDirectory: string;
}
/** A tag binding: a key and a value (empty for a key alone). */
export interface TagBinding {
  key: string;
  value: string;
}
export type WorkspaceUpdated = {
  type: 'WorkspaceUpdated';
  data: {
    autoApply?: boolean;
    name?: string;
    description?: string | null;
    executionEngine?: string;
    terraformVersion?: string;
    executionMode?: ExecutionMode;
    tagsAdded?: string[];
    tagsRemoved?: string[];
    /** Bindings added or given a new value, by key. */
    tagBindings?: TagBinding[];
    /** The project it moved to. */
    projectId?: string;
    autoApplyRunTrigger?: boolean;
    /** Settings changed; those absent keep their value. */
    settings?: Partial<WorkspaceSettings>;
  };
};
export type WorkspaceDeleted = { type: 'WorkspaceDeleted'; data: { id: string } };
/** A user, team or run took the workspace lock. */
export type WorkspaceLocked = {
  type: 'WorkspaceLocked';
  data: { by: { kind: 'user' | 'team' | 'run'; id: string }; reason: string | null };
};
export type WorkspaceUnlocked = {
  type: 'WorkspaceUnlocked';
  data: { by: { kind: 'user' | 'team' | 'run'; id: string }; force: boolean };
};

// ---- configuration versions ------------------------------------------------------------------

export type ConfigurationVersionCreated = {
  type: 'ConfigurationVersionCreated';
  data: {
    id: string;
    workspaceId: string;
    organization: string;
    autoQueueRuns: boolean;
    speculative: boolean;
    provisional: boolean;
    source: string;
    /** Runs queued by the upload are created by whoever created the version. */
    createdBy: Requester | null;
  };
};
/** The archive itself is in the event (base64): the log is the truth, and uploads are small. */
export type ConfigurationVersionUploaded = {
  type: 'ConfigurationVersionUploaded';
  data: { size: number; sha256: string; archive: string; files: string[] };
};
export type ConfigurationVersionErrored = {
  type: 'ConfigurationVersionErrored';
  data: { message: string };
};
export type ConfigurationVersionArchived = { type: 'ConfigurationVersionArchived'; data: object };

// ---- runs ------------------------------------------------------------------------------------

/** A run-specific variable: `value` is a literal in the configuration language (`"\"x\""`). */
export interface RunVariable {
  key: string;
  value: string;
}

type Empty = Record<string, never>;
type Commented = { comment: string | null };

/** Each run event's data, by type; the types themselves are the run machine's (one list). */
export interface RunEventData {
  RunCreated: {
    id: string;
    workspaceId: string;
    organization: string;
    configurationVersionId: string;
    createdBy: Requester | null;
    source: string;
    triggerReason: string;
    message: string;
    isDestroy: boolean;
    refresh: boolean;
    refreshOnly: boolean;
    replaceAddrs: string[] | null;
    targetAddrs: string[] | null;
    variables: RunVariable[];
    planOnly: boolean;
    savePlan: boolean;
    autoApply: boolean;
    allowEmptyApply: boolean;
    allowConfigGeneration: boolean;
    debuggingMode: boolean;
    engineVersion: string | null;
    /** The applied run whose run trigger queued this one (absent for every other run). */
    triggeredBy?: { runId: string; workspaceId: string; workspaceName: string };
  };
  RunFetchStarted: Empty;
  RunFetchCompleted: Empty;
  RunPrePlanStarted: Empty;
  RunPrePlanCompleted: Empty;
  RunQueuingStarted: Empty;
  RunPlanQueued: Empty;
  RunPlanStarted: Empty;
  /**
   * Logs, the plan JSON and state rest sealed (they can carry sensitive values); events written
   * before they were sealed hold them in clear, and reads take either. The redacted plan JSON
   * holds no sensitive value and rests in clear.
   */
  RunPlanFinished: {
    hasChanges: boolean;
    counts: ResourceCounts;
    log: string | Sealed;
    /** The plan JSON, sealed (see `Sealer.sealJson`); in clear in older events. */
    jsonOutput: unknown;
    jsonOutputRedacted?: unknown;
  };
  RunCostEstimateStarted: Empty;
  RunCostEstimated: object;
  RunPolicyCheckStarted: Empty;
  RunPolicyChecked: { outcome: 'passed' | 'soft_failed' };
  RunPolicyOverridden: Commented;
  RunPostPlanStarted: Empty;
  RunPostPlanCompleted: Empty;
  RunPlanStageCompleted: Empty;
  RunConfirmed: Commented & { auto: boolean };
  RunApplyQueued: Empty;
  RunApplyStarted: Empty;
  RunApplyFinished: { counts: ResourceCounts; log: string | Sealed };
  RunDiscarded: Commented & { reason: 'user' | 'force_execute' };
  RunCancelRequested: Commented & { at: string; forceCancelAvailableAt: string };
  RunCanceled: { log: string | Sealed | null };
  RunForceCanceled: Commented & { at: string };
  RunForceExecuteRequested: Empty;
  RunErrored: { phase: 'plan' | 'apply' | null; message: string; log: string | Sealed | null };
  RunCommented: { id: string; body: string; by: Requester | null };
}

/** Every run event with its full data (a run machine event too). */
export type RunEvent = RunEventOf<RunEventData>;
/** The run event of one type. */
export type RunEventNamed<T extends RunEventType> = Extract<RunEvent, { type: T }>;

export type RunCreated = RunEventNamed<'RunCreated'>;
export type RunCommented = RunEventNamed<'RunCommented'>;

export type WorkspaceEvent =
  WorkspaceCreated | WorkspaceUpdated | WorkspaceDeleted | WorkspaceLocked | WorkspaceUnlocked;

export type ConfigurationVersionEvent =
  | ConfigurationVersionCreated
  | ConfigurationVersionUploaded
  | ConfigurationVersionErrored
  | ConfigurationVersionArchived;

// ---- state versions --------------------------------------------------------------------------

/** A new state for a workspace, recorded by the executor after an apply (the state is in the log). */
export type StateVersionCreated = {
  type: 'StateVersionCreated';
  data: {
    id: string;
    workspaceId: string;
    runId: string | null;
    serial: number;
    lineage: string;
    md5: string;
    /** The state document (JSON text), sealed; in clear in older events. */
    state: string | Sealed;
    /** The document's length in bytes (absent in older events: the clear state's length). */
    size?: number;
    resources: number;
    engineVersion: string | null;
  };
};

/**
 * A client (the terraform CLI's local operations, `state push`) asked to store a state: the
 * document follows at a secret upload address and is then recorded as `StateVersionCreated`.
 */
export type StateVersionUploadRequested = {
  type: 'StateVersionUploadRequested';
  data: {
    id: string;
    workspaceId: string;
    runId: string | null;
    serial: number;
    lineage: string | null;
    md5: string;
  };
};

export type StateVersionEvent = StateVersionCreated | StateVersionUploadRequested;

export type RunsContextEvent =
  | StateVersionEvent
  | OrganizationEvent
  | ProjectEvent
  | WorkspaceEvent
  | ConfigurationVersionEvent
  | RunEvent;

/** A grant's custom permissions as the read models store them (JSON), or null for a fixed level. */
export const customText = (custom: CustomPermissions | undefined): string | null =>
  custom === undefined ? null : JSON.stringify(custom);

/** A grant's custom permissions as stored (JSON), or null for a fixed level. */
export const customOf = (text: string | null): CustomPermissions | null =>
  text === null ? null : (JSON.parse(text) as CustomPermissions);
