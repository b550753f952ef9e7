// Rows of durable messages between actors: written in the sender's transaction, leased by the
// message runner, settled (delivered or rejected) in the receiving step's transaction.
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { EventColumn } from "./Actors.ts"
import * as Rows from "./Rows.ts"

export const MessageRow = Schema.Struct({
  id: Schema.BigInt,
  /** The sending actor; null when told outside any actor's step. */
  from_kind: Schema.NullOr(Schema.String),
  from_actor_id: Schema.NullOr(Schema.String),
  from_seq: Schema.NullOr(Schema.BigInt),
  to_kind: Schema.String,
  to_actor_id: Schema.String,
  event: EventColumn,
  state: Schema.Literals(["pending", "delivered", "rejected"]),
  attempts: Schema.Number,
  next_attempt_at: Schema.Date,
  lease_until: Schema.NullOr(Schema.Date),
  /** Why it waits (pending) or why it was refused (rejected). */
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  settled_at: Schema.NullOr(Schema.Date),
  /** The receiver's seq whose step applied it. */
  settled_seq: Schema.NullOr(Schema.BigInt),
  /** The W3C traceparent of the telling step, which the receiving step's trace links to. */
  traceparent: Schema.NullOr(Schema.String)
})
export type MessageRow = typeof MessageRow.Type

export interface MessageWrite {
  readonly from: { readonly kind: string; readonly actorId: string; readonly seq: bigint } | undefined
  readonly toKind: string
  readonly toActorId: string
  readonly event: unknown
  readonly now: Date
  readonly traceparent?: string | undefined
}

export const insertMessage = Effect.fnUntraced(function* (message: MessageWrite) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_messages (from_kind, from_actor_id, from_seq, to_kind, to_actor_id, event, state,
                                next_attempt_at, created_at, traceparent)
    VALUES (${message.from?.kind ?? null}, ${message.from?.actorId ?? null}, ${message.from?.seq ?? null},
            ${message.toKind}, ${message.toActorId}, ${JSON.stringify(message.event)}::jsonb, 'pending',
            ${message.now}, ${message.now}, ${message.traceparent ?? null})`
})

const lease = Rows.all("ActorMessages.leaseMessages", {
  Request: Schema.Struct({ now: Schema.Date, leaseUntil: Schema.Date, limit: Schema.Number }),
  Result: MessageRow,
  execute: ({ now, leaseUntil, limit }, sql) => sql`
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

/**
 * Leases up to `limit` ready messages: pending, due, not leased by a live runner, and the oldest
 * pending one of their receiver (so one receiver hears its messages in order, one at a time).
 */
export const leaseMessages = (now: Date, leaseUntil: Date, limit: number) => lease({ now, leaseUntil, limit })

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

/** Extends the lease of a message still being delivered (its runner is alive). */
export const renewMessageLease = Effect.fnUntraced(function* (id: bigint, leaseUntil: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE actor_messages SET lease_until = ${leaseUntil} WHERE id = ${id} AND state = 'pending'`
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

const pendingTo = Rows.all("ActorMessages.pendingMessagesTo", {
  Request: Schema.Struct({ kind: Schema.String, actorId: Schema.String, limit: Schema.Number }),
  Result: MessageRow,
  execute: ({ kind, actorId, limit }, sql) => sql`
    SELECT * FROM actor_messages
    WHERE to_kind = ${kind} AND to_actor_id = ${actorId} AND state = 'pending'
    ORDER BY id LIMIT ${limit}`
})

/** Messages still waiting for the actor, oldest first. */
export const pendingMessagesTo = (kind: string, actorId: string, limit: number) => pendingTo({ kind, actorId, limit })

const byId = Rows.maybe("ActorMessages.findMessage", {
  Request: Schema.Struct({ id: Schema.BigInt }),
  Result: MessageRow,
  execute: ({ id }, sql) => sql`SELECT * FROM actor_messages WHERE id = ${id}`
})

export const findMessage = (id: bigint) => byId({ id })

/** When the next receiver's oldest pending message falls due (or its lease lapses). */
export const nextMessageDue = Rows.one("ActorMessages.nextMessageDue", {
  Request: Schema.Void,
  Result: Schema.Struct({ at: Schema.NullOr(Schema.Date) }),
  execute: (_, sql) => sql`
    SELECT min(greatest(m.next_attempt_at, coalesce(m.lease_until, m.next_attempt_at))) AS at
    FROM actor_messages m
    WHERE m.state = 'pending'
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages e
        WHERE e.to_kind = m.to_kind AND e.to_actor_id = m.to_actor_id AND e.state = 'pending' AND e.id < m.id)`
})(undefined).pipe(Effect.map((row) => row.at ?? undefined))

/** Deletes messages settled before `before`; answers how many went. */
export const reapMessages = Effect.fnUntraced(function* (before: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM actor_messages WHERE state <> 'pending' AND settled_at < ${before} RETURNING id`
  return rows.length
})
