// A domain service over a replaced repository, without a database: the rate limiter judges the
// count its windows repository answers (the repository is a service, so a test stands in for it).
import { RateLimitExceeded } from "@troupe/domain/kernel/Errors"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { RateLimitWindowsRepository } from "@troupe/storage/repositories/RateLimitWindows"
import { Effect, Layer } from "effect"
import { describe, expect, it } from "vitest"

const limit = { scope: "test.limit", limit: 2, windowSeconds: 60 }

/** A windows repository that counts hits in memory, per scope and subject (one long window). */
const countingWindows = () => {
  const hits = new Map<string, number>()
  return Layer.succeed(
    RateLimitWindowsRepository,
    RateLimitWindowsRepository.of({
      hit: (scope, subject) =>
        Effect.sync(() => {
          const key = `${scope}/${subject}`
          const count = (hits.get(key) ?? 0) + 1
          hits.set(key, count)
          return count
        })
    })
  )
}

describe("RateLimiter over a replaced windows repository", () => {
  it("lets the limit's hits through and refuses the next with the seconds left in the window", async () => {
    const outcomes = await Effect.runPromise(
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const consume = limiter.consume(limit, "192.0.2.1").pipe(Effect.result)
        return [yield* consume, yield* consume, yield* consume]
      }).pipe(Effect.provide(RateLimiter.layer.pipe(Layer.provide(countingWindows()))))
    )
    expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Success", "Success", "Failure"])
    const refused = outcomes[2]!
    expect(refused._tag === "Failure" && refused.failure).toBeInstanceOf(RateLimitExceeded)
  })
})
