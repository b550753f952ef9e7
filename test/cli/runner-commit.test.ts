// The reference runner's commit through an outage of its server (Runner.ts `untilDeadline`), on a
// TestClock over the runner's own reachability client and a stand-in transport: a finished call's
// result is tried again for as long as the claim's deadline is ahead, so an outage longer than a
// few retries loses nothing; past the deadline it is left to the expiry rule.
import { it } from "@effect/vitest"
import { watchReachability } from "@troupe/cli/runner/Reachability"
import { untilDeadline } from "@troupe/cli/runner/Runner"
import { Clock, Effect, Exit, Fiber } from "effect"
import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { describe, expect } from "vitest"

const refused = (request: HttpClientRequest.HttpClientRequest) =>
  new HttpClientError.HttpClientError({
    reason: new HttpClientError.TransportError({
      request,
      cause: new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4799"), { code: "ECONNREFUSED" })
      })
    })
  })

/** A server down until `upAt` (clock millis); `attempts` are the clock's times of commits. */
const commitThroughOutage = (upAt: number, deadlineAt: number) =>
  Effect.gen(function* () {
    const attempts: Array<number> = []
    const transport = HttpClient.make((request) =>
      Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        attempts.push(now)
        if (now < upAt) return yield* Effect.fail(refused(request))
        return HttpClientResponse.fromWeb(request, new Response("{}"))
      })
    )
    const reachability = watchReachability({
      baseUrl: "http://runner-server",
      client: transport,
      say: () => Effect.void
    })
    const commit = reachability.client.post("http://runner-server/agent_api/v1/executor/inbox/run/key/commit")
    const committing = yield* Effect.forkChild(Effect.exit(untilDeadline(commit, Effect.succeed(deadlineAt))))
    return { attempts, committing }
  })

describe("the runner's commit", () => {
  it.effect("is tried again through a two-minute outage while the claim's deadline is ahead, and lands", () =>
    Effect.gen(function* () {
      const { attempts, committing } = yield* commitThroughOutage(120_000, 600_000)
      yield* TestClock.adjust("10 minutes")
      const exit = yield* Fiber.join(committing)
      expect(Exit.isSuccess(exit) && exit.value.status).toBe(200)
      expect(attempts.at(-1)).toBeGreaterThanOrEqual(120_000)
      expect(attempts.at(-1)).toBeLessThan(600_000)
    })
  )

  it.effect("gives up once the deadline has passed, leaving the call to the expiry rule", () =>
    Effect.gen(function* () {
      const { attempts, committing } = yield* commitThroughOutage(Number.POSITIVE_INFINITY, 90_000)
      yield* TestClock.adjust("10 minutes")
      const exit = yield* Fiber.join(committing)
      expect(Exit.isFailure(exit)).toBe(true)
      expect(attempts.filter((at) => at >= 90_000)).toHaveLength(1)
      expect(attempts.length).toBeGreaterThan(7)
    })
  )
})
