/**
 * Shapes shared by the execution drivers: terraform state (format v4), the plan JSON that
 * `terraform show -json` prints, the run's flags and inputs, and the outcome of a phase.
 */

/** The JSON value space of configurations, states and plans. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** One instance of a resource in a state file. */
export interface StateInstance {
  index_key?: number | string;
  schema_version: number;
  status?: 'tainted';
  attributes: Record<string, Json>;
  sensitive_attributes: Json[];
  dependencies?: string[];
}

/** One resource block's worth of instances in a state file. */
export interface StateResource {
  mode: 'managed' | 'data';
  type: string;
  name: string;
  provider: string;
  instances: StateInstance[];
}

/** A terraform state file, format version 4. */
export interface StateV4 {
  version: 4;
  terraform_version: string;
  serial: number;
  lineage: string;
  outputs: Record<string, { value: Json; type: Json; sensitive?: boolean }>;
  resources: StateResource[];
  check_results?: Json;
}

/** The run attributes that change what a plan does. */
export interface RunFlags {
  refresh: boolean;
  refreshOnly: boolean;
  isDestroy: boolean;
  replaceAddrs: readonly string[];
  targetAddrs: readonly string[];
  allowEmptyApply: boolean;
  allowConfigGeneration: boolean;
  /** The run's `debugging-mode`: terraform runs with `TF_LOG=TRACE`, its trace in the phase log. */
  debuggingMode: boolean;
}

export const defaultFlags: RunFlags = {
  refresh: true,
  refreshOnly: false,
  isDestroy: false,
  replaceAddrs: [],
  targetAddrs: [],
  allowEmptyApply: false,
  allowConfigGeneration: false,
  debuggingMode: false,
};

/** A workspace variable as the executor receives it (sensitive values already unsealed). */
export interface WorkspaceVariable {
  key: string;
  value: string;
  category: 'terraform' | 'env';
  /** When true a terraform variable's value is an HCL literal, otherwise a plain string. */
  hcl: boolean;
  sensitive: boolean;
}

/** A run variable: the value is always an HCL literal (`"\"text\""`, `3`, `["a"]`). */
export interface RunVariable {
  key: string;
  value: string;
}

/** The configuration files of a configuration version: relative path → text. */
export type ConfigFiles = ReadonlyMap<string, string>;

/** What names one resource instance in `terraform show -json`. */
export interface ResourceInstance {
  address: string;
  /** `data` for data sources terraform reads during the plan; the builtin driver plans none. */
  mode: 'managed' | 'data';
  type: string;
  name: string;
  index?: number | string;
  provider_name: string;
}

/** The change record of one resource instance, as in `terraform show -json`. */
export interface ResourceChange extends ResourceInstance {
  /** Terraform leaves out a value it has none for (`after` of a change still unknown). */
  change: {
    actions: Action[];
    before?: Json;
    after?: Json;
    after_unknown?: Json;
    before_sensitive?: Json;
    after_sensitive?: Json;
    importing?: { id?: string };
  };
  /** One of {@link ActionReason} from the builtin driver; terraform has more of them. */
  action_reason?: string;
}

export type Action = 'no-op' | 'create' | 'read' | 'update' | 'delete' | 'forget';

/** Why terraform plans a replacement or a deletion (`action_reason`), as far as Keel plans them. */
export type ActionReason =
  | 'replace_by_request'
  | 'replace_because_tainted'
  | 'replace_because_cannot_update'
  | 'delete_because_no_resource_config'
  | 'delete_because_count_index'
  | 'delete_because_each_key';

export interface OutputChange {
  actions: Action[];
  /** Terraform leaves out a value it has none for (`after` while the value is unknown). */
  before?: Json;
  after?: Json;
  /** `true`, `false`, or for a partly known collection the mask of its unknown parts. */
  after_unknown?: Json;
  before_sensitive: boolean;
  after_sensitive: boolean;
}

/**
 * The machine-readable plan (`terraform show -json plan.tfplan`). Terraform leaves out empty
 * lists and maps (`omitempty`): a plan that ends with no resources has no `resources`, a plan with
 * no resource changes (refresh-only, or only outputs) no `resource_changes`, so those are optional.
 */
export interface PlanJson {
  format_version: string;
  terraform_version: string;
  variables?: Record<string, { value: Json }>;
  planned_values: {
    outputs?: Record<string, { sensitive: boolean; value?: Json }>;
    root_module: { resources?: PlannedResource[] };
  };
  resource_changes?: ResourceChange[];
  output_changes?: Record<string, OutputChange>;
  prior_state?: {
    format_version: string;
    terraform_version: string;
    values: {
      outputs?: Record<string, { sensitive: boolean; value: Json }>;
      root_module: { resources?: PlannedResource[] };
    };
  };
  /** Only the root module's variables and their sensitivity (the builtin driver). */
  configuration?: {
    root_module: { variables?: Record<string, { sensitive?: boolean; default?: Json }> };
  };
  applyable: boolean;
  complete: boolean;
  errored: boolean;
}

export interface PlannedResource extends ResourceInstance {
  schema_version: number;
  /** Left out by terraform when no value is known yet (`omitempty`). */
  values?: Record<string, Json>;
  sensitive_values?: Record<string, Json>;
}

/** The counts a plan resource reports. */
export interface PlanCounts {
  additions: number;
  changes: number;
  destructions: number;
  imports: number;
  hasChanges: boolean;
}

/** The counts an apply resource reports. */
export interface ApplyCounts {
  additions: number;
  changes: number;
  destructions: number;
  imports: number;
}

/** Where a phase writes its log, one line at a time, as the lines are produced. */
export type LogSink = (line: string) => void;
