import type { FieldSpec, FieldType, Operation, PathSchema } from './fields.js';

/**
 * The OpenAPI 3.0 document of the `/v1` API, made from the declared paths (as the reference serves
 * `sys/internal/specs/openapi`): one entry per mounted path (`/pki/roles/{name}`), its segments as
 * path parameters, a LIST as a GET with `list=true` on the path with a trailing slash, and the
 * declared fields as the request body of writes.
 */

export interface OpenApiMount {
  /** the mount path with its trailing slash (`pki/`); '' for sys and auth/token paths */
  path: string;
  /** the engine type (`pki`), or `system` */
  type: string;
  paths: readonly PathSchema[];
  /** whether a path (as declared, relative to the mount) needs sudo: the reference's `x-vault-sudo` */
  sudo?: (pattern: string) => boolean;
  /** whether a path is served without a token: the reference's `x-vault-unauthenticated` */
  unauthenticated?: (pattern: string) => boolean;
}

interface JsonSchema {
  type: string;
  format?: string;
  items?: { type: string };
  pattern?: string;
  description?: string;
  default?: unknown;
  enum?: readonly string[];
}

/** The reference's mapping of its field types to OpenAPI types. */
const SCHEMA_OF: Readonly<Record<FieldType, Omit<JsonSchema, 'description'>>> = {
  string: { type: 'string' },
  'lowercase-string': { type: 'string', format: 'lowercase' },
  name: { type: 'string', pattern: '\\w([\\w-.]*\\w)?' },
  int: { type: 'integer' },
  bool: { type: 'boolean' },
  duration: { type: 'string', format: 'duration' },
  'signed-duration': { type: 'string', format: 'duration' },
  'comma-string-slice': { type: 'array', items: { type: 'string' } },
  'string-slice': { type: 'array', items: { type: 'string' } },
  'kv-pairs': { type: 'object', format: 'kvpairs' },
  map: { type: 'object', format: 'map' },
};

function fieldSchema(spec: FieldSpec): JsonSchema {
  return {
    ...SCHEMA_OF[spec.type],
    description: spec.description,
    ...(spec.default === undefined ? {} : { default: spec.default }),
    ...(spec.allowed === undefined ? {} : { enum: spec.allowed }),
  };
}

/** `roles/:name` → `roles/{name}`, `leases/lookup/*prefix` → `leases/lookup/{prefix}`. */
export const openApiPath = (pattern: string): string =>
  pattern.replace(/[:*](\w+)/g, (_m, name: string) => `{${name}}`);

const segmentNames = (pattern: string): string[] =>
  [...pattern.matchAll(/[:*](\w+)/g)].map((m) => m[1]!);

/** The words of a path for an operation id: its segments keep their names (`roles-name`). */
const words = (text: string): string[] => text.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');

const pascal = (parts: readonly string[]): string =>
  parts.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

const VERB: Readonly<Record<Operation, string>> = {
  read: 'read',
  list: 'list',
  update: 'write',
  patch: 'patch',
  delete: 'delete',
};

const METHOD: Readonly<Record<Operation, 'get' | 'post' | 'patch' | 'delete'>> = {
  read: 'get',
  list: 'get',
  update: 'post',
  patch: 'patch',
  delete: 'delete',
};

type OperationObject = Record<string, unknown>;
type PathItem = Record<string, unknown>;

export interface OpenApiDocument {
  openapi: string;
  info: Record<string, unknown>;
  paths: Record<string, PathItem>;
  components: { schemas: Record<string, unknown> };
}

/** The document for the mounts given (each engine's declared paths under its mount path). */
export function openApiDocument(mounts: readonly OpenApiMount[]): OpenApiDocument {
  const paths: Record<string, PathItem> = {};
  const schemas: Record<string, unknown> = {};
  for (const mount of mounts) {
    for (const declared of mount.paths) {
      const segments = segmentNames(declared.pattern);
      const base = `/${mount.path}${openApiPath(declared.pattern)}`;
      const unsegmented = Object.entries(declared.fields).filter(
        ([name]) => !segments.includes(name),
      );
      const body = unsegmented.filter(([, s]) => s.query !== true);
      const queried = unsegmented.filter(([, s]) => s.query === true);
      const parameters = segments.map((name) => ({
        name,
        description: declared.fields[name]?.description ?? `The ${name} in the path`,
        in: 'path',
        required: true,
        schema: { type: 'string' },
      }));
      for (const operation of declared.operations) {
        const key = operation === 'list' ? `${base}/` : base;
        const item: PathItem = (paths[key] ??= {
          description: declared.summary,
          ...(parameters.length ? { parameters } : {}),
          ...(mount.sudo?.(declared.pattern) === true ? { 'x-vault-sudo': true } : {}),
          ...(mount.unauthenticated?.(declared.pattern) === true
            ? { 'x-vault-unauthenticated': true }
            : {}),
        });
        const id = [
          ...words(mount.path || mount.type),
          VERB[operation],
          ...words(declared.pattern),
        ];
        const op: OperationObject = {
          summary: declared.summary,
          operationId: id.join('-').toLowerCase(),
          tags: [mount.type === 'system' ? 'system' : 'secrets'],
          responses: { '200': { description: 'OK' } },
        };
        // A read's query fields (the reference lists them so too).
        if (operation === 'read' && queried.length > 0)
          op.parameters = queried.map(([name, s]) => ({
            name,
            description: s.description,
            in: 'query',
            ...(s.required === true ? { required: true } : {}),
            schema: fieldSchema(s),
          }));
        if (operation === 'list')
          op.parameters = [
            {
              name: 'list',
              description: 'Must be set to `true`',
              in: 'query',
              required: true,
              schema: { type: 'string', enum: ['true'] },
            },
          ];
        if ((operation === 'update' || operation === 'patch') && body.length > 0) {
          const name = `${pascal(id)}Request`;
          const required = body.filter(([, s]) => s.required === true).map(([n]) => n);
          schemas[name] = {
            type: 'object',
            properties: Object.fromEntries(body.map(([n, s]) => [n, fieldSchema(s)])),
            ...(required.length ? { required } : {}),
          };
          op.requestBody = {
            required: required.length > 0,
            content: {
              [operation === 'patch' ? 'application/merge-patch+json' : 'application/json']: {
                schema: { $ref: `#/components/schemas/${name}` },
              },
            },
          };
        }
        item[METHOD[operation]] = op;
      }
    }
  }
  return {
    openapi: '3.0.2',
    info: {
      title: 'Keel secrets API',
      description:
        'The /v1 API of Keel: the system backend, token authentication and every mounted engine.',
      // What sys/health reports as the version too.
      version: 'keel',
    },
    paths,
    components: { schemas },
  };
}
