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
