// Rows of durable messages between actors: written in the sender's transaction, leased by the
// message runner, settled (delivered or rejected) in the receiving step's transaction.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface MessageRow {
  readonly id: bigint
  /** The sending actor; null when told outside any actor's step. */
  readonly from_kind: string | null
  readonly from_actor_id: string | null
  readonly from_seq: bigint | null
  readonly to_kind: string
  readonly to_actor_id: string
  readonly event: { readonly type: string; readonly [key: string]: unknown }
  readonly state: "pending" | "delivered" | "rejected"
  readonly attempts: number
  readonly next_attempt_at: Date
  readonly lease_until: Date | null
  /** Why it waits (pending) or why it was refused (rejected). */
  readonly last_error: string | null
  readonly created_at: Date
  readonly settled_at: Date | null
  /** The receiver's seq whose step applied it. */
  readonly settled_seq: bigint | null
}

export interface MessageWrite {
  readonly from: { readonly kind: string; readonly actorId: string; readonly seq: bigint } | undefined
  readonly toKind: string
  readonly toActorId: string
  readonly event: unknown
  readonly now: Date
}

export const insertMessage = Effect.fnUntraced(function* (message: MessageWrite) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_messages (from_kind, from_actor_id, from_seq, to_kind, to_actor_id, event, state,
                                next_attempt_at, created_at)
    VALUES (${message.from?.kind ?? null}, ${message.from?.actorId ?? null}, ${message.from?.seq ?? null},
            ${message.toKind}, ${message.toActorId}, ${JSON.stringify(message.event)}::jsonb, 'pending',
            ${message.now}, ${message.now})`
})

/**
 * Leases up to `limit` ready messages: pending, due, not leased by a live runner, and the oldest
 * pending one of their receiver (so one receiver hears its messages in order, one at a time).
 */
export const leaseMessages = Effect.fnUntraced(function* (now: Date, leaseUntil: Date, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<MessageRow>`
    UPDATE actor_messages SET lease_until = ${leaseUntil}, attempts = attempts + 1
    WHERE id IN (
      SELECT m.id FROM actor_messages m
      WHERE m.state = 'pending' AND m.next_attempt_at <= ${now} AND (m.lease_until IS NULL OR m.lease_until < ${now})
        AND NOT EXISTS (
          SELECT 1 FROM actor_messages e
          WHERE e.to_kind = m.to_kind AND e.to_actor_id = m.to_actor_id AND e.state = 'pending' AND e.id < m.id)
      ORDER BY m.next_attempt_at, m.id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING *`
})

/** Settles a pending message; answers false when it already was (a repeated delivery). */
export const settleMessage = Effect.fnUntraced(function* (
  id: bigint,
  verdict:
    | { readonly _tag: "Delivered"; readonly seq: bigint }
    | { readonly _tag: "Rejected"; readonly reason: string },
  now: Date
) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_messages
    SET state = ${verdict._tag === "Delivered" ? "delivered" : "rejected"}, settled_at = ${now}, lease_until = NULL,
        settled_seq = ${verdict._tag === "Delivered" ? verdict.seq : null},
        last_error = ${verdict._tag === "Rejected" ? verdict.reason : null}
    WHERE id = ${id} AND state = 'pending' RETURNING id`
  return rows.length > 0
})

/** The message waits (its receiver does not exist yet, or is quarantined): try again at `at`. */
export const retryMessageLater = Effect.fnUntraced(function* (id: bigint, at: Date, reason: string) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE actor_messages SET lease_until = NULL, next_attempt_at = ${at}, last_error = ${reason}
    WHERE id = ${id} AND state = 'pending'`
})

/** Makes the actor's waiting messages due now (it was created, or restarted); answers how many. */
export const retryActorMessagesNow = Effect.fnUntraced(function* (kind: string, actorId: string, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_messages SET next_attempt_at = ${now}
    WHERE to_kind = ${kind} AND to_actor_id = ${actorId} AND state = 'pending' AND next_attempt_at > ${now}
    RETURNING id`
  return rows.length
})

/** Messages still waiting for the actor, oldest first. */
export const pendingMessagesTo = Effect.fnUntraced(function* (kind: string, actorId: string, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<MessageRow>`
    SELECT * FROM actor_messages
    WHERE to_kind = ${kind} AND to_actor_id = ${actorId} AND state = 'pending'
    ORDER BY id LIMIT ${limit}`
})

export const findMessage = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<MessageRow>`SELECT * FROM actor_messages WHERE id = ${id}`
  return rows[0]
})

/** When the next receiver's oldest pending message falls due (or its lease lapses). */
export const nextMessageDue = Effect.gen(function* () {
  const sql = yield* SqlClient
  const rows = yield* sql<{ at: Date | null }>`
    SELECT min(greatest(m.next_attempt_at, coalesce(m.lease_until, m.next_attempt_at))) AS at
    FROM actor_messages m
    WHERE m.state = 'pending'
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages e
        WHERE e.to_kind = m.to_kind AND e.to_actor_id = m.to_actor_id AND e.state = 'pending' AND e.id < m.id)`
  return rows[0]?.at ?? undefined
})

/** Deletes messages settled before `before`; answers how many went. */
export const reapMessages = Effect.fnUntraced(function* (before: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM actor_messages WHERE state <> 'pending' AND settled_at < ${before} RETURNING id`
  return rows.length
})
