// Rows of `authorization_codes`: issued by the consent page, used once by the token exchange.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface AuthorizationCodeRow {
  readonly id: bigint
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly client_id: string
  readonly redirect_uri: string
  readonly code_challenge: string
  readonly consequence: Record<string, unknown>
  readonly approved_by: bigint
  readonly created_at: Date
  readonly expires_at: Date
  readonly used_at: Date | null
}

export const insertCode = Effect.fnUntraced(function* (code: {
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

export const findCode = Effect.fnUntraced(function* (lookup: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<AuthorizationCodeRow>`SELECT * FROM authorization_codes WHERE lookup = ${lookup} FOR UPDATE`
  return rows[0]
})

/** Marks the code used; answers false when it already was (single use). */
export const useCode = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows =
    yield* sql`UPDATE authorization_codes SET used_at = ${now} WHERE id = ${id} AND used_at IS NULL RETURNING id`
  return rows.length > 0
})
