// Handles released by a rename: only a user's latest released name is reserved (one row per
// user), for 14 days against every other member of the account.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const reserved = Rows.all("HandleReservations.reservedLike", {
  Request: Schema.Struct({
    accountId: Schema.BigInt,
    base: Schema.String,
    at: Schema.Date,
    exceptUserId: Schema.NullOr(Schema.BigInt)
  }),
  Result: Schema.Struct({ handle: Schema.String }),
  execute: ({ accountId, base, at, exceptUserId }, sql) => sql`
    SELECT handle FROM handle_reservations
    WHERE account_id = ${accountId} AND expires_at > ${at}
      AND (handle = ${base} OR handle LIKE ${`${base.slice(0, 29)}%`})
      ${exceptUserId === null ? sql`` : sql`AND user_id <> ${exceptUserId}`}`
})

/** Handles equal to `base` or shaped `base…` that are reserved at `at` for someone else. */
const reservedLike = (accountId: bigint, base: string, at: Date, exceptUserId: bigint | null = null) =>
  Effect.map(reserved({ accountId, base, at, exceptUserId }), (rows) => new Set(rows.map((row) => row.handle)))

/** Records the name a user just released, replacing the user's earlier reservation. */
const reserve = Effect.fnUntraced(function* (row: {
  readonly userId: bigint
  readonly accountId: bigint
  readonly handle: string
  readonly releasedAt: Date
  readonly expiresAt: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO handle_reservations (user_id, account_id, handle, released_at, expires_at)
    VALUES (${row.userId}, ${row.accountId}, ${row.handle}, ${row.releasedAt}, ${row.expiresAt})
    ON CONFLICT (user_id) DO UPDATE SET handle = EXCLUDED.handle, released_at = EXCLUDED.released_at,
                                        expires_at = EXCLUDED.expires_at`
})

const setHandle = Effect.fnUntraced(function* (userId: bigint, handle: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET handle = ${handle}, updated_at = ${now} WHERE id = ${userId}`
})

export class HandleReservationsRepository extends Context.Service<HandleReservationsRepository>()(
  "@troupe/storage/HandleReservationsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        reservedLike,
        reserve,
        setHandle
      })
    )
  }
) {
  static readonly layer = Layer.effect(HandleReservationsRepository, HandleReservationsRepository.make)
}
