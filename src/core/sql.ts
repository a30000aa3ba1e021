import type { Db, Statement } from './database.js';

/**
 * Prepared statements made on first use and kept. Query objects are built before their
 * projection's tables exist, so they must not prepare eagerly; SQLite re-prepares a kept
 * statement by itself when a rebuild recreates the table.
 */
export function statements(db: Db) {
  const cache = new Map<string, Statement>();
  return <P extends unknown[] = unknown[], R = unknown>(sql: string): Statement<P, R> => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare<unknown[]>(sql);
      cache.set(sql, stmt);
    }
    return stmt as unknown as Statement<P, R>;
  };
}

/**
 * One page of `SELECT * FROM <table> WHERE <where> ORDER BY <order>`, and how many rows match in
 * all: an offset-paged list's two reads.
 */
export function countedPage<R>(
  sql: ReturnType<typeof statements>,
  q: {
    table: string;
    where: string;
    params: readonly unknown[];
    order: string;
    limit: number;
    offset: number;
  },
): { rows: R[]; total: number } {
  const { n } = sql(`SELECT COUNT(*) AS n FROM ${q.table} WHERE ${q.where}`).get(...q.params) as {
    n: number;
  };
  const rows = sql(
    `SELECT * FROM ${q.table} WHERE ${q.where} ORDER BY ${q.order} LIMIT ? OFFSET ?`,
  ).all(...q.params, q.limit, q.offset) as R[];
  return { rows, total: n };
}

/**
 * Reads of read models that keep each row as one JSON document in a `doc` column: `all` parses
 * every row a query gives, `one` the first (or null). Statements are kept as `statements` keeps
 * them.
 */
export function docRows(db: Db) {
  const prepared = statements(db);
  return {
    all<T>(sql: string, ...args: string[]): T[] {
      return prepared<string[], { doc: string }>(sql)
        .all(...args)
        .map((r) => JSON.parse(r.doc) as T);
    },
    one<T>(sql: string, ...args: string[]): T | null {
      const row = prepared<string[], { doc: string }>(sql).get(...args);
      return row === undefined ? null : (JSON.parse(row.doc) as T);
    },
  };
}

/** The reads of a {@link DocTable}: one document by id, and those with a key value in id order. */
export interface DocReader<T> {
  readonly get: (id: string) => T | null;
  readonly where: (value: string) => T[];
}

/**
 * A read model table that keeps each row as one JSON document with its `id` and one column it is
 * looked up by (an organization, a run): the statement that creates it, its upsert and its reads.
 */
export class DocTable<T extends { id: string }> {
  constructor(
    readonly name: string,
    readonly key: string,
    private readonly keyOf: (doc: T) => string,
    private readonly options: { uniqueKey?: boolean } = {},
  ) {}

  /** `CREATE TABLE IF NOT EXISTS …` for a projection's setup. */
  get ddl(): string {
    const unique = this.options.uniqueKey === true ? ' UNIQUE' : '';
    return `CREATE TABLE IF NOT EXISTS ${this.name} (id TEXT PRIMARY KEY, ${this.key} TEXT NOT NULL${unique}, doc TEXT NOT NULL);`;
  }

  /** Inserts or replaces a document (prepared now: call it once the table exists). */
  writer(db: Db): (doc: T) => void {
    const put = db.prepare(
      `INSERT OR REPLACE INTO ${this.name} (id, ${this.key}, doc) VALUES (?, ?, ?)`,
    );
    return (doc) => {
      put.run(doc.id, this.keyOf(doc), JSON.stringify(doc));
    };
  }

  /** Reads by id and by key (in id order), prepared on first use as `docRows` does. */
  reader(db: Db): DocReader<T> {
    const docs = docRows(db);
    const { name, key } = this;
    return {
      get: (id) => docs.one<T>(`SELECT doc FROM ${name} WHERE id = ?`, id),
      where: (value) => docs.all<T>(`SELECT doc FROM ${name} WHERE ${key} = ? ORDER BY id`, value),
    };
  }
}
