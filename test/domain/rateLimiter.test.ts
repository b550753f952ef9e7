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
  const count = (scope: string, subject: string) => {
    const key = `${scope}/${subject}`
    const total = (hits.get(key) ?? 0) + 1
    hits.set(key, total)
    return total
  }
  return Layer.succeed(
    RateLimitWindowsRepository,
    RateLimitWindowsRepository.of({
      hit: (scope, subject) => Effect.sync(() => count(scope, subject)),
      hitInOrder: (each) =>
        Effect.sync(() => {
          const totals: Array<number | null> = []
          let within = true
          for (const hit of each) {
            const total: number | null = within ? count(hit.scope, hit.subject) : null
            totals.push(total)
            within = total !== null && total <= hit.limit
          }
          return totals
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

  it("counts budgets in order: the first one over refuses with its own window, the ones after count nothing", async () => {
    const backstop = { scope: "test.limit.ip", limit: 3, windowSeconds: 120 }
    const outcomes = await Effect.runPromise(
      Effect.gen(function* () {
        const limiter = yield* RateLimiter
        const both = (executor: string) =>
          limiter.consumeInOrder([
            { limit, subject: executor },
            { limit: backstop, subject: "192.0.2.1" }
          ])
        // a, a (backstop 2), a refused by its own budget (backstop not counted), b, b refused by the backstop.
        return [
          yield* Effect.result(both("a")),
          yield* Effect.result(both("a")),
          yield* Effect.result(both("a")),
          yield* Effect.result(both("b")),
          yield* Effect.result(both("b"))
        ]
      }).pipe(Effect.provide(RateLimiter.layer.pipe(Layer.provide(countingWindows()))))
    )
    expect(outcomes.map((outcome) => outcome._tag)).toEqual(["Success", "Success", "Failure", "Success", "Failure"])
    const own = outcomes[2]!
    const byBackstop = outcomes[4]!
    expect(own._tag === "Failure" && own.failure.retryAfterSeconds).toBeLessThanOrEqual(60)
    expect(byBackstop._tag === "Failure" && byBackstop.failure.retryAfterSeconds).toBeGreaterThan(0)
  })
})
