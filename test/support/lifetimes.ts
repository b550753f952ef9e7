// Node lifetimes and pending idempotency receipts for recovery tests: a receipt written as the
// Idempotent middleware writes it, and another live node (a PostgreSQL session holding a
// lifetime's lock) that can be killed.
import { createHash } from "node:crypto"
import { PgConnection } from "@effect/sql-pg"
import { lifetimeLockClass } from "@troupe/storage/NodeLifetime"
import { IdempotencyReceiptsRepository } from "@troupe/storage/repositories/IdempotencyReceipts"
import { Effect, Exit, type Redacted, Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

/** The digest the Idempotent middleware keeps: method, path and query, body (members sorted). */
export const requestDigest = (method: string, path: string, canonicalBody: string) =>
  createHash("sha256").update(`${method}\n${path}\n${canonicalBody}`).digest()

/** Claims `key` for `lifetime` as a node starting the request would; the request then never ends. */
export const pendingReceipt = (
  receipt: { readonly caller: string; readonly route: string; readonly key: string; readonly digest: Uint8Array },
  lifetime: bigint
) =>
  Effect.gen(function* () {
    const at = new Date()
    const receipts = yield* IdempotencyReceiptsRepository.make
    const claimed = yield* receipts.claim(
      receipt,
      receipt.digest,
      lifetime,
      at,
      new Date(at.getTime() + 24 * 60 * 60 * 1000)
    )
    if (claimed._tag !== "Claimed") return yield* Effect.die(new Error(`the key ${receipt.key} is taken`))
  })

/** The receipt of `key`, as stored. */
export const receiptOf = (key: string) =>
  Effect.map(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ state: string; lifetime_id: bigint | null }>`
      SELECT state, lifetime_id FROM idempotency_receipts WHERE key = ${key}`
    ),
    (rows) => rows[0]
  )

/** Another node's lifetime on PostgreSQL: a session of its own holding the lifetime's lock. */
export const startLiveNode = async (url: Redacted.Redacted<string>) => {
  const scope = Effect.runSync(Scope.make())
  const session = await Effect.runPromise(Scope.provide(PgConnection.make({ url }), scope))
  const started = await Effect.runPromise(
    session.query(
      `WITH started AS (INSERT INTO node_lifetimes (started_at) VALUES (now()) RETURNING id)
       SELECT id, pg_advisory_lock(${lifetimeLockClass}, id::int) FROM started`
    )
  )
  return {
    lifetime: started.rows[0]!.id as bigint,
    /** Ends its session as a crash would (no clean stop); resolves once the lock is gone. */
    kill: () =>
      Effect.runPromise(Scope.close(scope, Exit.void)).then(() => awaitLockGone(url, started.rows[0]!.id as bigint))
  }
}

/**
 * Resolves once PostgreSQL has ended the session holding `lifetime`'s lock: taking the lock
 * ourselves waits for exactly that. The lock is given back at once.
 */
export const awaitLockGone = (url: Redacted.Redacted<string>, lifetime: bigint) =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const session = yield* PgConnection.make({ url })
        yield* session.query("SET statement_timeout = '30s'")
        yield* session.query(`SELECT pg_advisory_lock(${lifetimeLockClass}, $1::int)`, [String(lifetime)])
        yield* session.query(`SELECT pg_advisory_unlock(${lifetimeLockClass}, $1::int)`, [String(lifetime)])
      })
    )
  )
