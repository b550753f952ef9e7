// Numbered SQL migrations (migrations/NNNN_name.sql), applied in order by effect's Migrator,
// which records them in effect_sql_migrations and serializes concurrent starts (it locks
// that table for the run; a second starter waits, then finds nothing left to do).
import { readdir, readFile } from "node:fs/promises"
import { Effect } from "effect"
import { Migrator } from "effect/sql"
import { SqlClient } from "effect/sql/SqlClient"

const directory = new URL("../migrations/", import.meta.url)

/** Runs a multi-statement SQL script as one statement (the extended protocol takes one). */
const runScript = (text: string) =>
  Effect.flatMap(SqlClient, (sql) => {
    let tag = "migration"
    while (text.includes(`$${tag}$`)) tag += "_"
    return sql.unsafe(`DO $run_${tag}$ BEGIN EXECUTE $${tag}$${text}$${tag}$; END $run_${tag}$`).unprepared
  })

const loader: Migrator.Loader = Effect.tryPromise({
  try: async () => {
    const files = (await readdir(directory)).filter((name) => /^\d{4}_[a-z0-9_]+\.sql$/.test(name)).sort()
    return Promise.all(
      files.map(async (name): Promise<Migrator.ResolvedMigration> => {
        const text = await readFile(new URL(name, directory), "utf8")
        return [Number(name.slice(0, 4)), name.slice(5, -4), Effect.succeed(runScript(text))]
      })
    )
  },
  catch: (cause) => new Migrator.MigrationError({ kind: "Failed", message: "could not read migrations", cause })
})

/** Applies every pending migration; answers the ones applied now as [id, name] pairs. */
export const migrate = Migrator.make({})({ loader })

/** The highest migration the database records (0 when none). */
export const migrationLevel = Effect.flatMap(SqlClient, (sql) =>
  Effect.map(
    sql<{ readonly level: number | null }>`SELECT max(migration_id) AS level FROM effect_sql_migrations`,
    (rows) => Number(rows[0]?.level ?? 0)
  )
)
