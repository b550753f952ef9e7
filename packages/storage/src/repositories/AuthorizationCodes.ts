// Rows of `authorization_codes`: issued by the consent page, used once by the token exchange,
// which records the lineages it issued; presented again, it is marked replayed.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const AuthorizationCodeRow = Schema.Struct({
  id: Schema.BigInt,
  lookup: Schema.String,
  salt: Schema.Uint8Array,
  digest: Schema.Uint8Array,
  client_id: Schema.String,
  redirect_uri: Schema.String,
  code_challenge: Schema.String,
  consequence: Schema.Record(Schema.String, Schema.Unknown),
  approved_by: Schema.BigInt,
  created_at: Schema.Date,
  expires_at: Schema.Date,
  used_at: Schema.NullOr(Schema.Date),
  replayed_at: Schema.NullOr(Schema.Date)
})
export type AuthorizationCodeRow = typeof AuthorizationCodeRow.Type

const insertCode = Effect.fnUntraced(function* (code: {
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly clientId: string
  readonly redirectUri: string
  readonly codeChallenge: string
  readonly consequence: unknown
  readonly approvedBy: bigint
  readonly now: Date
  readonly expiresAt: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO authorization_codes (lookup, salt, digest, client_id, redirect_uri, code_challenge, consequence,
                                     approved_by, created_at, expires_at)
    VALUES (${code.lookup}, ${code.salt}, ${code.digest}, ${code.clientId}, ${code.redirectUri}, ${code.codeChallenge},
            ${JSON.stringify(code.consequence)}::jsonb, ${code.approvedBy}, ${code.now}, ${code.expiresAt})`
})

const byLookup = Rows.maybe("AuthorizationCodes.findCode", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: AuthorizationCodeRow,
  execute: ({ lookup }, sql) => sql`SELECT * FROM authorization_codes WHERE lookup = ${lookup} FOR UPDATE`
})

const findCode = (lookup: string) => byLookup({ lookup })

const byId = Rows.maybe("AuthorizationCodes.lockCode", {
  Request: Schema.Struct({ id: Schema.BigInt }),
  Result: AuthorizationCodeRow,
  execute: ({ id }, sql) => sql`SELECT * FROM authorization_codes WHERE id = ${id} FOR UPDATE`
})

/** The code's row, locked for the rest of the transaction. */
const lockCode = (id: bigint) => byId({ id })

/** Records the lineages the code's exchange started. */
const recordIssued = Effect.fnUntraced(function* (id: bigint, lineagePublicIds: ReadonlyArray<string>) {
  const sql = yield* SqlClient
  yield* sql`UPDATE authorization_codes SET issued_lineages = ${[...lineagePublicIds]}::uuid[] WHERE id = ${id}`
})

/** Marks the code presented again (the first time counts). */
const markReplayed = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE authorization_codes SET replayed_at = ${now} WHERE id = ${id} AND replayed_at IS NULL`
})

const issued = Rows.all("AuthorizationCodes.issuedLineages", {
  Request: Schema.Struct({ id: Schema.BigInt }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ id }, sql) => sql`
    SELECT l.id FROM authorization_codes c JOIN credential_lineages l ON l.public_id = ANY (c.issued_lineages)
    WHERE c.id = ${id}`
})

/** The ids of the lineages the code issued. */
const issuedLineages = (id: bigint) => Effect.map(issued({ id }), (rows) => rows.map((row) => row.id))

/** Marks the code used; answers false when it already was (single use). */
const useCode = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows =
    yield* sql`UPDATE authorization_codes SET used_at = ${now} WHERE id = ${id} AND used_at IS NULL RETURNING id`
  return rows.length > 0
})

export class AuthorizationCodesRepository extends Context.Service<AuthorizationCodesRepository>()(
  "@troupe/storage/AuthorizationCodesRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        insertCode,
        findCode,
        lockCode,
        useCode,
        recordIssued,
        markReplayed,
        issuedLineages
      })
    )
  }
) {
  static readonly layer = Layer.effect(AuthorizationCodesRepository, AuthorizationCodesRepository.make)
}
