// Rows of `idempotency_receipts`: (caller, route, key) → digest of the request and, once
// completed, the response to replay verbatim within the replay window.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface ReceiptRow {
  readonly id: bigint
  readonly request_digest: Uint8Array
  readonly state: "pending" | "completed"
  readonly response_status: number | null
  readonly response_headers: Record<string, string> | null
  readonly response_body: string | null
  readonly created_at: Date
  readonly expires_at: Date
}

export interface ReceiptKey {
  readonly caller: string
  readonly route: string
  readonly key: string
}

/**
 * Claims the key for a new request: drops an expired receipt, then inserts a pending one.
 * Answers the new receipt's id, or the existing live receipt when the key is taken.
 */
export const claim = Effect.fnUntraced(function* (k: ReceiptKey, digest: Uint8Array, now: Date, expiresAt: Date) {
  const sql = yield* SqlClient
  yield* sql`
    DELETE FROM idempotency_receipts
    WHERE caller = ${k.caller} AND route = ${k.route} AND key = ${k.key} AND expires_at <= ${now}`
  const inserted = yield* sql<{ id: bigint }>`
    INSERT INTO idempotency_receipts (caller, route, key, request_digest, state, created_at, expires_at)
    VALUES (${k.caller}, ${k.route}, ${k.key}, ${digest}, 'pending', ${now}, ${expiresAt})
    ON CONFLICT (caller, route, key) DO NOTHING
    RETURNING id`
  if (inserted[0]) return { _tag: "Claimed" as const, id: inserted[0].id }
  const rows = yield* sql<ReceiptRow>`
    SELECT id, request_digest, state, response_status, response_headers, response_body, created_at, expires_at
    FROM idempotency_receipts WHERE caller = ${k.caller} AND route = ${k.route} AND key = ${k.key}`
  return rows[0] ? { _tag: "Existing" as const, receipt: rows[0] } : { _tag: "Vanished" as const }
})

export const complete = Effect.fnUntraced(function* (
  id: bigint,
  response: { readonly status: number; readonly headers: Record<string, string>; readonly body: string }
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE idempotency_receipts
    SET state = 'completed', response_status = ${response.status},
        response_headers = ${JSON.stringify(response.headers)}::jsonb, response_body = ${response.body}
    WHERE id = ${id}`
})

export const release = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM idempotency_receipts WHERE id = ${id} AND state = 'pending'`
})

/** A pending receipt older than `staleBefore` belongs to a request that died: take it over. */
export const takeOverStale = Effect.fnUntraced(function* (
  id: bigint,
  digest: Uint8Array,
  staleBefore: Date,
  now: Date
) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE idempotency_receipts SET request_digest = ${digest}, created_at = ${now}
    WHERE id = ${id} AND state = 'pending' AND created_at < ${staleBefore}
    RETURNING id`
  return rows.length > 0
})

export const reapExpired = Effect.fnUntraced(function* (now: Date) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM idempotency_receipts WHERE expires_at <= ${now}`
})
