// Rows of `idempotency_receipts`: (caller, route, key) → digest of the request and, once
// completed, the response to replay verbatim within the replay window. A pending receipt names
// the node lifetime that claimed it and when; a later write on that claim must match both.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const ReceiptRow = Schema.Struct({
  id: Schema.BigInt,
  request_digest: Schema.Uint8Array,
  state: Schema.Literals(["pending", "completed"]),
  response_status: Schema.NullOr(Schema.Number),
  response_headers: Schema.NullOr(Schema.Record(Schema.String, Schema.String)),
  response_body: Schema.NullOr(Schema.String),
  /** The node lifetime running the request; null for receipts claimed before lifetimes existed. */
  lifetime_id: Schema.NullOr(Schema.BigInt),
  created_at: Schema.Date,
  expires_at: Schema.Date
})
export type ReceiptRow = typeof ReceiptRow.Type

export const ReceiptKey = Schema.Struct({ caller: Schema.String, route: Schema.String, key: Schema.String })
export type ReceiptKey = typeof ReceiptKey.Type

/** One claim on a receipt: the row, the lifetime that made it and when (its `created_at`). */
export interface Claim {
  readonly id: bigint
  readonly lifetime: bigint
  readonly at: Date
}

/**
 * Drops an expired receipt of the key and inserts a pending one, in one statement: the insert
 * reads the deletion's count, so the deletion runs first and its row no longer conflicts. A
 * concurrent claim of the same key waits on the row either one deleted or inserted, then finds
 * the other's receipt (the conflict) and inserts nothing.
 */
const insertPending = Rows.maybe("IdempotencyReceipts.claim (new receipt)", {
  Request: Schema.Struct({
    ...ReceiptKey.fields,
    digest: Schema.Uint8Array,
    lifetime: Schema.BigInt,
    now: Schema.Date,
    expiresAt: Schema.Date
  }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ caller, route, key, digest, lifetime, now, expiresAt }, sql) => sql`
    WITH expired AS (
      DELETE FROM idempotency_receipts
      WHERE caller = ${caller} AND route = ${route} AND key = ${key} AND expires_at <= ${now}
      RETURNING id
    )
    INSERT INTO idempotency_receipts (caller, route, key, request_digest, state, lifetime_id, created_at, expires_at)
    SELECT ${caller}, ${route}, ${key}, ${digest}, 'pending', ${lifetime}, ${now}, ${expiresAt}
    FROM (SELECT count(*) FROM expired) AS dropped
    ON CONFLICT (caller, route, key) DO NOTHING
    RETURNING id`
})

const receiptOf = Rows.maybe("IdempotencyReceipts.claim (existing receipt)", {
  Request: ReceiptKey,
  Result: ReceiptRow,
  execute: ({ caller, route, key }, sql) => sql`
    SELECT id, request_digest, state, response_status, response_headers, response_body, lifetime_id, created_at,
      expires_at
    FROM idempotency_receipts WHERE caller = ${caller} AND route = ${route} AND key = ${key}`
})

/** The completed, unexpired receipt of a key (a receipt read door answers it). */
const findCompleted = Effect.fnUntraced(function* (key: ReceiptKey, now: Date) {
  const found = yield* receiptOf(key)
  return found?.state === "completed" && found.expires_at > now ? found : undefined
})

/**
 * Claims the key for a new request: replaces an expired receipt with a pending one (one
 * statement). Answers the new receipt's id, or the existing live receipt when the key is taken.
 */
const claim = Effect.fnUntraced(function* (
  k: ReceiptKey,
  digest: Uint8Array,
  lifetime: bigint,
  now: Date,
  expiresAt: Date
) {
  const inserted = yield* insertPending({ ...k, digest, lifetime, now, expiresAt })
  if (inserted) return { _tag: "Claimed" as const, claim: { id: inserted.id, lifetime, at: now } }
  const receipt = yield* receiptOf(k)
  return receipt ? { _tag: "Existing" as const, receipt } : { _tag: "Vanished" as const }
})

/** Keeps the response, unless the claim was taken over meanwhile. */
const complete = Effect.fnUntraced(function* (
  c: Claim,
  response: { readonly status: number; readonly headers: Record<string, string>; readonly body: string }
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE idempotency_receipts
    SET state = 'completed', response_status = ${response.status},
        response_headers = ${JSON.stringify(response.headers)}::jsonb, response_body = ${response.body}
    WHERE id = ${c.id} AND state = 'pending' AND lifetime_id = ${c.lifetime} AND created_at = ${c.at}`
})

/** Frees the key, unless the claim was taken over meanwhile. */
const release = Effect.fnUntraced(function* (c: Claim) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM idempotency_receipts
    WHERE id = ${c.id} AND state = 'pending' AND lifetime_id = ${c.lifetime} AND created_at = ${c.at}`
})

/**
 * Takes over a pending receipt whose request died, if it is still as it was seen (no one else
 * took it over first). Answers the new claim.
 */
const takeOver = Effect.fnUntraced(function* (seen: ReceiptRow, digest: Uint8Array, lifetime: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE idempotency_receipts SET request_digest = ${digest}, lifetime_id = ${lifetime}, created_at = ${now}
    WHERE id = ${seen.id} AND state = 'pending' AND lifetime_id IS NOT DISTINCT FROM ${seen.lifetime_id}
      AND created_at = ${seen.created_at}
    RETURNING id`
  return rows.length > 0 ? { id: seen.id, lifetime, at: now } : undefined
})

/**
 * Keeps a completed response under a key not yet taken, in the caller's transaction (a kernel
 * call keeps its answer with the effect it made, so a retried job replays it). Answers whether
 * it was kept; a concurrent keeper of the same key waits for the first one's transaction.
 */
const keep = Rows.maybe("IdempotencyReceipts.keep", {
  Request: Schema.Struct({ ...ReceiptKey.fields, body: Schema.String, now: Schema.Date, expiresAt: Schema.Date }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ caller, route, key, body, now, expiresAt }, sql) => sql`
    INSERT INTO idempotency_receipts (caller, route, key, request_digest, state, response_status, response_body,
      created_at, expires_at)
    VALUES (${caller}, ${route}, ${key}, ${new Uint8Array()}, 'completed', 200, ${body}, ${now}, ${expiresAt})
    ON CONFLICT (caller, route, key) DO NOTHING
    RETURNING id`
})

const reapExpired = Effect.fnUntraced(function* (now: Date) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM idempotency_receipts WHERE expires_at <= ${now}`
})

export class IdempotencyReceiptsRepository extends Context.Service<IdempotencyReceiptsRepository>()(
  "@troupe/storage/IdempotencyReceiptsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        claim,
        complete,
        keep,
        release,
        takeOver,
        reapExpired,
        findCompleted
      })
    )
  }
) {
  static readonly layer = Layer.effect(IdempotencyReceiptsRepository, IdempotencyReceiptsRepository.make)
}
