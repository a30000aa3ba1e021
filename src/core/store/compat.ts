import { NOCASE_COLLATION } from './translate.js';

/**
 * What the PostgreSQL adapter creates once in a database so that Keel's SQLite-dialect SQL runs
 * unchanged: SQLite's JSON functions over text documents (`json_extract`, `json_each`,
 * `json_set`, with paths of the form `$`, `$.a.b` or `$."a-b"`) and a case-insensitive ICU collation for
 * `COLLATE NOCASE`. A JSON string comes back as its text, anything else as JSON text, as SQLite's
 * functions give them. One transaction, under the log's lock, so two nodes starting at once do
 * not race to create them.
 */
export const COMPAT_SQL = `
DO $$ BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_collation WHERE collname = '${NOCASE_COLLATION}') THEN
    CREATE COLLATION ${NOCASE_COLLATION} (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
  END IF;
END $$;
CREATE OR REPLACE FUNCTION keel_json_path(path text) RETURNS text[]
  LANGUAGE sql IMMUTABLE STRICT AS $f$
    SELECT CASE WHEN path = '$' THEN '{}'::text[]
      ELSE ARRAY(SELECT btrim(e, '"') FROM unnest(string_to_array(substr(path, 3), '.'))
        WITH ORDINALITY AS u(e, i) ORDER BY i) END $f$;
CREATE OR REPLACE FUNCTION keel_json_text(value jsonb) RETURNS text
  LANGUAGE sql IMMUTABLE AS $f$
    SELECT CASE jsonb_typeof(value) WHEN 'string' THEN value #>> '{}'
      WHEN 'null' THEN NULL ELSE value::text END $f$;
CREATE OR REPLACE FUNCTION json_extract(doc text, path text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $f$
    SELECT keel_json_text(doc::jsonb #> keel_json_path(path)) $f$;
CREATE OR REPLACE FUNCTION json_set(doc text, path text, value text) RETURNS text
  LANGUAGE sql IMMUTABLE AS $f$
    SELECT jsonb_set(doc::jsonb, keel_json_path(path), to_jsonb(value), true)::text $f$;
CREATE OR REPLACE FUNCTION json_each(doc text, path text DEFAULT '$')
  RETURNS TABLE (key text, value text)
  LANGUAGE sql IMMUTABLE AS $f$
    WITH d AS (SELECT doc::jsonb #> keel_json_path(path) AS j)
    SELECT (a.o - 1)::text, keel_json_text(a.v) FROM d,
      jsonb_array_elements(CASE WHEN jsonb_typeof(d.j) = 'array' THEN d.j ELSE '[]' END)
        WITH ORDINALITY AS a(v, o)
    UNION ALL
    SELECT b.k, keel_json_text(b.v) FROM d,
      jsonb_each(CASE WHEN jsonb_typeof(d.j) = 'object' THEN d.j ELSE '{}' END) AS b(k, v) $f$;
`;
