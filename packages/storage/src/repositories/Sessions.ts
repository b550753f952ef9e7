// Rows of `sessions`: API (bearer) and browser (cookie) sessions, stored as lookup id plus a
// salted digest of the secret.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const SessionKind = Schema.Literals(["api", "browser"])

export const SessionRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  user_id: Schema.BigInt,
  kind: SessionKind,
  lookup: Schema.String,
  salt: Schema.Uint8Array,
  digest: Schema.Uint8Array,
  issued_at: Schema.Date,
  expires_at: Schema.Date,
  revoked_at: Schema.NullOr(Schema.Date),
  state: Schema.Literals(["active", "revoked", "expired"])
})
export type SessionRow = typeof SessionRow.Type

export const NewSession = Schema.Struct({
  publicId: Schema.String,
  userId: Schema.BigInt,
  kind: SessionKind,
  lookup: Schema.String,
  salt: Schema.Uint8Array,
  digest: Schema.Uint8Array,
  issuedAt: Schema.Date,
  expiresAt: Schema.Date
})
export type NewSession = typeof NewSession.Type

const insertSession = Rows.one("Sessions.insertSession", {
  Request: NewSession,
  Result: SessionRow,
  execute: (session, sql) => sql`
    INSERT INTO sessions (public_id, user_id, kind, lookup, salt, digest, issued_at, expires_at)
    VALUES (${session.publicId}, ${session.userId}, ${session.kind}, ${session.lookup}, ${session.salt},
            ${session.digest}, ${session.issuedAt}, ${session.expiresAt})
    RETURNING *`
})

const byLookup = Rows.maybe("Sessions.findSessionByLookup", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: SessionRow,
  execute: ({ lookup }, sql) => sql`SELECT * FROM sessions WHERE lookup = ${lookup}`
})

const findSessionByLookup = (lookup: string) => byLookup({ lookup })

/** Records the session's lifecycle state (written by the API session actor's steps). */
const setSessionState = Effect.fnUntraced(function* (publicId: string, state: "revoked" | "expired", at: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE sessions SET state = ${state}, revoked_at = ${state === "revoked" ? at : null}
    WHERE public_id = ${publicId} AND state = 'active'`
})

export class SessionsRepository extends Context.Service<SessionsRepository>()("@troupe/storage/SessionsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      insertSession,
      findSessionByLookup,
      setSessionState
    })
  )
}) {
  static readonly layer = Layer.effect(SessionsRepository, SessionsRepository.make)
}
