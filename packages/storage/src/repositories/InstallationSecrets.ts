// Rows of `installation_secrets`: random keys made once per installation (e.g. the CSRF key).
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const secret = Rows.one("InstallationSecrets.getOrCreate", {
  Request: Schema.Struct({ name: Schema.String }),
  Result: Schema.Struct({ value: Schema.Uint8Array }),
  execute: ({ name }, sql) => sql`SELECT value FROM installation_secrets WHERE name = ${name}`
})

/** The secret named `name`, storing `candidate` first when there is none yet. */
const getOrCreate = Effect.fnUntraced(function* (name: string, candidate: Uint8Array, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO installation_secrets (name, value, created_at) VALUES (${name}, ${candidate}, ${now})
    ON CONFLICT (name) DO NOTHING`
  return (yield* secret({ name })).value
})

export class InstallationSecretsRepository extends Context.Service<InstallationSecretsRepository>()(
  "@troupe/storage/InstallationSecretsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        getOrCreate
      })
    )
  }
) {
  static readonly layer = Layer.effect(InstallationSecretsRepository, InstallationSecretsRepository.make)
}
