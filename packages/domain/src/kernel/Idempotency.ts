// The Idempotency-Key store: the first request with a key runs and its response is kept for the
// replay window; a repeat with the same request digest replays it verbatim, a different digest
// is a mismatch. Duplicates arriving together are serialized: on one node by a per-key lock, and
// across nodes by the pending receipt row (the late one is told to retry shortly). A pending
// receipt whose node lifetime is over (its process stopped or died) is taken over at once.
import { NodeLifetime } from "@troupe/storage/NodeLifetime"
import * as Repo from "@troupe/storage/repositories/IdempotencyReceipts"
import { Context, Effect, Exit, Layer, RcMap, Schema, Semaphore } from "effect"
import { now } from "./Now.ts"

export const replayWindowMillis = 24 * 60 * 60 * 1000
/**
 * A pending receipt of a live lifetime this old belongs to a request that died mid-way; a repeat
 * may take it over.
 */
const abandonedAfterMillis = 5 * 60 * 1000

export interface StoredResponse {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

export class IdempotencyMismatch extends Schema.TaggedError<IdempotencyMismatch>()("IdempotencyMismatch", {}) {}

/** Another node is still running the first request with this key. */
export class IdempotencyInProgress extends Schema.TaggedError<IdempotencyInProgress>()("IdempotencyInProgress", {}) {}

export type ReceiptKey = Repo.ReceiptKey

export class Idempotency extends Context.Service<
  Idempotency,
  {
    /**
     * Runs `compute` once per key within the replay window. Only acceptances (2xx) are kept;
     * any other answer releases the key so a corrected retry may use it.
     */
    readonly run: <E, R>(
      key: ReceiptKey,
      digest: Uint8Array,
      compute: Effect.Effect<StoredResponse, E, R>
    ) => Effect.Effect<
      { readonly response: StoredResponse; readonly replayed: boolean },
      E | IdempotencyMismatch | IdempotencyInProgress,
      R
    >
    /** The acceptance kept for a key, while its window lasts (a receipt door answers it). */
    readonly stored: (key: ReceiptKey) => Effect.Effect<StoredResponse | undefined>
  }
>()("@troupe/domain/kernel/Idempotency") {
  static readonly layer = Layer.effect(
    Idempotency,
    Effect.gen(function* () {
      const receipts = yield* Repo.IdempotencyReceiptsRepository
      const lifetimes = yield* NodeLifetime
      const locks = yield* RcMap.make({
        lookup: (_key: string) => Semaphore.make(1),
        idleTimeToLive: "1 minute"
      })
      const runClaimed = <E, R>(claim: Repo.Claim, compute: Effect.Effect<StoredResponse, E, R>) =>
        Effect.gen(function* () {
          const exit = yield* Effect.exit(compute)
          if (Exit.isSuccess(exit) && exit.value.status >= 200 && exit.value.status < 300) {
            yield* Effect.orDie(receipts.complete(claim, exit.value))
            return { response: exit.value, replayed: false }
          }
          yield* Effect.orDie(receipts.release(claim))
          const response = yield* exit
          return { response, replayed: false }
        }).pipe(Effect.onInterrupt(() => Effect.orDie(receipts.release(claim))))

      /** Whether the request that claimed a pending receipt is gone, so a repeat may run it. */
      const abandoned = (receipt: Repo.ReceiptRow, lifetime: bigint, at: Date) =>
        receipt.created_at.getTime() < at.getTime() - abandonedAfterMillis
          ? Effect.succeed(true)
          : receipt.lifetime_id === null || receipt.lifetime_id === lifetime
            ? Effect.succeed(false)
            : lifetimes.isOver(receipt.lifetime_id)

      const sameDigest = (a: Uint8Array, b: Uint8Array) => Buffer.from(a).equals(Buffer.from(b))

      const attempt = <E, R>(
        key: ReceiptKey,
        digest: Uint8Array,
        compute: Effect.Effect<StoredResponse, E, R>
      ): Effect.Effect<
        { readonly response: StoredResponse; readonly replayed: boolean },
        E | IdempotencyMismatch | IdempotencyInProgress,
        R
      > =>
        Effect.gen(function* () {
          const at = yield* now
          const lifetime = yield* lifetimes.current
          const claim = yield* Effect.orDie(
            receipts.claim(key, digest, lifetime, at, new Date(at.getTime() + replayWindowMillis))
          )
          switch (claim._tag) {
            case "Claimed":
              return yield* runClaimed(claim.claim, compute)
            case "Vanished":
              return yield* attempt(key, digest, compute)
            case "Existing": {
              const receipt = claim.receipt
              if (!sameDigest(receipt.request_digest, digest)) return yield* new IdempotencyMismatch()
              if (receipt.state === "completed") {
                return {
                  response: {
                    status: receipt.response_status!,
                    headers: receipt.response_headers ?? {},
                    body: receipt.response_body ?? ""
                  },
                  replayed: true
                }
              }
              const taken = (yield* abandoned(receipt, lifetime, at))
                ? yield* Effect.orDie(receipts.takeOver(receipt, digest, lifetime, at))
                : undefined
              if (taken) return yield* runClaimed(taken, compute)
              return yield* new IdempotencyInProgress()
            }
          }
        })

      const run = <E, R>(key: ReceiptKey, digest: Uint8Array, compute: Effect.Effect<StoredResponse, E, R>) =>
        Effect.scoped(
          Effect.gen(function* () {
            const lock = yield* RcMap.get(locks, `${key.caller}\u0000${key.route}\u0000${key.key}`)
            return yield* Semaphore.withPermit(lock, attempt(key, digest, compute))
          })
        )

      const stored = (key: ReceiptKey) =>
        Effect.gen(function* () {
          const found = yield* Effect.orDie(receipts.findCompleted(key, yield* now))
          return found === undefined
            ? undefined
            : { status: found.response_status!, headers: found.response_headers ?? {}, body: found.response_body ?? "" }
        })

      return Idempotency.of({ run, stored })
    })
  )
}
