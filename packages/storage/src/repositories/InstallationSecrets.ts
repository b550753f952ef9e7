// Rows of `installation_secrets`: random keys made once per installation (e.g. the CSRF key).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** The secret named `name`, storing `candidate` first when there is none yet. */
export const getOrCreate = Effect.fnUntraced(function* (name: string, candidate: Uint8Array, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO installation_secrets (name, value, created_at) VALUES (${name}, ${candidate}, ${now})
    ON CONFLICT (name) DO NOTHING`
  const rows = yield* sql<{ value: Uint8Array }>`SELECT value FROM installation_secrets WHERE name = ${name}`
  return rows[0]!.value
})
