// Rows of `sessions`: API (bearer) and browser (cookie) sessions, stored as lookup id plus a
// salted digest of the secret.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface SessionRow {
  readonly id: bigint
  readonly public_id: string
  readonly user_id: bigint
  readonly kind: "api" | "browser"
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly issued_at: Date
  readonly expires_at: Date
  readonly revoked_at: Date | null
  readonly state: "active" | "revoked" | "expired"
}

export interface NewSession {
  readonly publicId: string
  readonly userId: bigint
  readonly kind: "api" | "browser"
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly issuedAt: Date
  readonly expiresAt: Date
}

export const insertSession = Effect.fnUntraced(function* (session: NewSession) {
  const sql = yield* SqlClient
  const rows = yield* sql<SessionRow>`
    INSERT INTO sessions (public_id, user_id, kind, lookup, salt, digest, issued_at, expires_at)
    VALUES (${session.publicId}, ${session.userId}, ${session.kind}, ${session.lookup}, ${session.salt},
            ${session.digest}, ${session.issuedAt}, ${session.expiresAt})
    RETURNING *`
  return rows[0]!
})

export const findSessionByLookup = Effect.fnUntraced(function* (lookup: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<SessionRow>`SELECT * FROM sessions WHERE lookup = ${lookup}`
  return rows[0]
})

/** Records the session's lifecycle state (written by the API session actor's steps). */
export const setSessionState = Effect.fnUntraced(function* (publicId: string, state: "revoked" | "expired", at: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE sessions SET state = ${state}, revoked_at = ${state === "revoked" ? at : null}
    WHERE public_id = ${publicId} AND state = 'active'`
})
