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
  }
>()("@troupe/domain/kernel/RateLimiter") {
  static readonly layer = Layer.effect(
    RateLimiter,
    Effect.gen(function* () {
      const windows = yield* RateLimitWindowsRepository
      const consume = (limit: RateLimit, subject: string) =>
        Effect.gen(function* () {
          const at = (yield* now).getTime()
          const windowMillis = limit.windowSeconds * 1000
          const windowStart = Math.floor(at / windowMillis) * windowMillis
          const hits = yield* windows.hit(limit.scope, subject, new Date(windowStart))
          if (hits > limit.limit) {
            const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + windowMillis - at) / 1000))
            return yield* new RateLimitExceeded({ retryAfterSeconds })
          }
        }).pipe(Effect.catchTag("SqlError", Effect.die))
      return RateLimiter.of({ consume })
    })
  )
}
