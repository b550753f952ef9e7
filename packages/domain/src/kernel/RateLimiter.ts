// Fixed-window rate limits kept in the database, so they hold across restarts and nodes.
// A window starts at a multiple of its length since the epoch.
import { RateLimitWindowsRepository } from "@troupe/storage/repositories/RateLimitWindows"
import { Context, Effect, Layer } from "effect"
import { RateLimitExceeded } from "./Errors.ts"
import { now } from "./Now.ts"

export interface RateLimit {
  /** Names the budget, e.g. "session.login". */
  readonly scope: string
  readonly limit: number
  readonly windowSeconds: number
}

/** The spec's session login budget: 10 attempts per 3-minute fixed window per source IP. */
export const sessionLoginLimit: RateLimit = { scope: "session.login", limit: 10, windowSeconds: 180 }

export class RateLimiter extends Context.Service<
  RateLimiter,
  {
    /** Counts one hit for `subject`; fails with the seconds until the window ends once over the limit. */
    readonly consume: (limit: RateLimit, subject: string) => Effect.Effect<void, RateLimitExceeded>
    /**
     * `consume` of each in order, in one statement: a budget over its limit refuses, and the
     * budgets after it count nothing.
     */
    readonly consumeInOrder: (
      hits: ReadonlyArray<{ readonly limit: RateLimit; readonly subject: string }>
    ) => Effect.Effect<void, RateLimitExceeded>
  }
>()("@troupe/domain/kernel/RateLimiter") {
  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const windows = yield* RateLimitWindowsRepository
      const windowOf = (limit: RateLimit, at: number) => {
        const windowMillis = limit.windowSeconds * 1000
        const start = Math.floor(at / windowMillis) * windowMillis
        return { start, retryAfterSeconds: Math.max(1, Math.ceil((start + windowMillis - at) / 1000)) }
      }
      const consume = (limit: RateLimit, subject: string) =>
        Effect.gen(function* () {
          const at = (yield* now).getTime()
          const window = windowOf(limit, at)
          const hits = yield* windows.hit(limit.scope, subject, new Date(window.start))
          if (hits > limit.limit) {
            return yield* new RateLimitExceeded({ retryAfterSeconds: window.retryAfterSeconds })
          }
        }).pipe(Effect.catchTag("SqlError", Effect.die))
      const consumeInOrder = (hits: ReadonlyArray<{ readonly limit: RateLimit; readonly subject: string }>) =>
        Effect.gen(function* () {
          const at = (yield* now).getTime()
          const counted = hits.map(({ limit, subject }) => ({ limit, subject, window: windowOf(limit, at) }))
          const totals = yield* windows.hitInOrder(
            counted.map(({ limit, subject, window }) => ({
              scope: limit.scope,
              subject,
              windowStart: new Date(window.start),
              limit: limit.limit
            }))
          )
          const over = counted.find((each, index) => (totals[index] ?? 0) > each.limit.limit)
          if (over !== undefined) {
            return yield* new RateLimitExceeded({ retryAfterSeconds: over.window.retryAfterSeconds })
          }
        }).pipe(Effect.catchTag("SqlError", Effect.die))
      return RateLimiter.of({ consume, consumeInOrder })
    })
  )
}
