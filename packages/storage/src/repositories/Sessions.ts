// Rows of `sessions`: API (bearer) and browser (cookie) sessions, stored as lookup id plus a
// salted digest of the secret; a session is read with its user's row in one statement.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { UserRow } from "./Accounts.ts"
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

/** The session's columns, named `session_<column>` beside the user's own in the joined row. */
const sessionColumns = Object.keys(SessionRow.fields)
const sessionSelect = sessionColumns.map((column) => `s.${column} AS session_${column}`).join(", ")

/** A joined row as the session row and the user row (the extra columns are ignored by UserRow). */
const nested = (row: Record<string, unknown>) => {
  const session: Record<string, unknown> = {}
  for (const column of sessionColumns) session[column] = row[`session_${column}`]
  return { session, user: row }
}

const withUserByLookup = Rows.maybe("Sessions.findSessionWithUser", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: Schema.Struct({ session: SessionRow, user: UserRow }),
  execute: ({ lookup }, sql) =>
    Effect.map(
      sql<Record<string, unknown>>`
        SELECT ${sql.literal(sessionSelect)}, u.* FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.lookup = ${lookup}`,
      (rows) => rows.map(nested)
    )
})

/** The session for a lookup id with its user, read together (every request's authentication). */
const findSessionWithUser = (lookup: string) => withUserByLookup({ lookup })

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
      findSessionWithUser,
      setSessionState
    })
  )
}) {
  static readonly layer = Layer.effect(SessionsRepository, SessionsRepository.make)
}
