// Maps an exhausted budget to 429 rate_limited with Retry-After.
import { errors } from "@troupe/contracts/Errors"
import type { RateLimitExceeded } from "@troupe/domain/kernel/Errors"
import { type RateLimit, RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { Effect } from "effect"

const answered = <R>(effect: Effect.Effect<void, RateLimitExceeded, R>) =>
  effect.pipe(
    Effect.catchTag("RateLimitExceeded", (exceeded) => Effect.fail(errors.rateLimited(exceeded.retryAfterSeconds)))
  )

export const consume = (limit: RateLimit, subject: string) =>
  answered(Effect.flatMap(RateLimiter, (limiter) => limiter.consume(limit, subject)))

/** `consume` of each budget in order, in one statement: the first exhausted one answers. */
export const consumeInOrder = (hits: ReadonlyArray<{ readonly limit: RateLimit; readonly subject: string }>) =>
  answered(Effect.flatMap(RateLimiter, (limiter) => limiter.consumeInOrder(hits)))
