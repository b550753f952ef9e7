// Maps an exhausted budget to 429 rate_limited with Retry-After.
import { errors } from "@troupe/contracts/Errors"
import { type RateLimit, RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { Effect } from "effect"

export const consume = Effect.fnUntraced(function* (limit: RateLimit, subject: string) {
  const limiter = yield* RateLimiter
  yield* limiter
    .consume(limit, subject)
    .pipe(
      Effect.catchTag("RateLimitExceeded", (exceeded) => Effect.fail(errors.rateLimited(exceeded.retryAfterSeconds)))
    )
})

/** `consume` of each budget in order, in one statement: the first exhausted one answers. */
export const consumeInOrder = Effect.fnUntraced(function* (
  hits: ReadonlyArray<{ readonly limit: RateLimit; readonly subject: string }>
) {
  const limiter = yield* RateLimiter
  yield* limiter
    .consumeInOrder(hits)
    .pipe(
      Effect.catchTag("RateLimitExceeded", (exceeded) => Effect.fail(errors.rateLimited(exceeded.retryAfterSeconds)))
    )
})
