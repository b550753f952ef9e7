// Row counts of every table of a test server's database, read through the server's own SQL client
// (so the same on PostgreSQL and the embedded database), and the tables whose counts differ.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

export type RowCounts = Readonly<Record<string, number>>

export const rowCounts = (server: TestServer, except: ReadonlyArray<string> = []): Promise<RowCounts> =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const tables = yield* sql<{ name: string }>`
        SELECT table_name AS name FROM information_schema.tables
        WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`
      const counted = tables.map(({ name }) => name).filter((name) => !except.includes(name))
      const union = counted
        .map((name) => `SELECT '${name}' AS name, count(*)::int AS n FROM "${name}"`)
        .join(" UNION ALL ")
      const rows = yield* sql.unsafe<{ name: string; n: number }>(union)
      return Object.fromEntries(rows.map(({ name, n }) => [name, Number(n)]))
    })
  )

/** `table: before→after` for every table whose count changed. */
export const countChanges = (before: RowCounts, after: RowCounts) =>
  Object.keys({ ...before, ...after })
    .filter((name) => before[name] !== after[name])
    .map((name) => `${name}: ${before[name] ?? 0}→${after[name] ?? 0}`)
