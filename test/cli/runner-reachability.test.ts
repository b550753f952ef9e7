// The reference runner's view of whether its server answers (Reachability.ts), on a TestClock
// over a stand-in transport: an outage said once with its reason, requests then tried half a
// second after the last failure and doubling up to every 30 s, the first answer (or a subscribed
// cable, which lets the waiting requests go at once) said once; and the reasons of real failures.
import { it } from "@effect/vitest"
import { transportReason, watchReachability } from "@troupe/cli/runner/Reachability"
import { Clock, Effect, Fiber } from "effect"
import { FetchHttpClient, HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "effect/http"
import { TestClock } from "effect/testing"
import { describe, expect } from "vitest"
import { freePort } from "../support/processes.ts"

const refused = (request: HttpClientRequest.HttpClientRequest) =>
  new HttpClientError.HttpClientError({
    reason: new HttpClientError.TransportError({
      request,
      cause: new TypeError("fetch failed", {
        cause: Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:4799"), { code: "ECONNREFUSED" })
      })
    })
  })

/** A server that refuses connections until `up`; `attempts` are the clock's times of requests. */
const standIn = () =>
  Effect.gen(function* () {
    const state = { up: false, attempts: [] as Array<number>, lines: [] as Array<string> }
    const transport = HttpClient.make((request) =>
      Effect.gen(function* () {
        state.attempts.push(yield* Clock.currentTimeMillis)
        if (!state.up) return yield* Effect.fail(refused(request))
        return HttpClientResponse.fromWeb(request, new Response("{}"))
      })
    )
    const reachability = watchReachability({
      baseUrl: "http://runner-server",
      client: transport,
      say: (line) => Effect.sync(() => state.lines.push(line))
    })
    const request = reachability.client.get("http://runner-server/agent_api/v1/executor/inbox")
    return { state, reachability, request }
  })

const saidDown =
  "cannot reach http://runner-server: connection refused (ECONNREFUSED); trying again in 0.5 s, then doubling up to every 30 s"

describe("the runner's reachability", () => {
  it.effect(
    "says an outage once with its reason, tries again 0.5 s after, doubling up to 30 s, and says once it is over",
    () =>
      Effect.gen(function* () {
        const { state, request } = yield* standIn()
        // Requests back to back, as the inbox reads while its cable is down.
        const reading = yield* request.pipe(
          Effect.ignore,
          Effect.repeat({ while: () => state.attempts.length < 9 }),
          Effect.forkChild
        )
        yield* TestClock.adjust("100 seconds")
        yield* Fiber.join(reading)
        expect(state.attempts).toEqual([0, 500, 1500, 3500, 7500, 15_500, 31_500, 61_500, 91_500])
        expect(state.lines).toEqual([saidDown])

        state.up = true
        const back = yield* Effect.forkChild(request)
        yield* TestClock.adjust("21499 millis")
        expect(state.attempts).toHaveLength(9)
        yield* TestClock.adjust("1 millis")
        expect((yield* Fiber.join(back)).status).toBe(200)
        expect(state.lines).toEqual([saidDown, "reached http://runner-server after 121.5 s"])
        // Past the outage a request goes at once.
        expect((yield* request).status).toBe(200)
        expect(state.attempts.at(-1)).toBe(121_500)
      })
  )

  it.effect("a subscribed cable ends the outage: the request waiting its turn goes at once", () =>
    Effect.gen(function* () {
      const { state, reachability, request } = yield* standIn()
      state.up = true
      yield* request
      state.up = false
      yield* Effect.ignore(request)
      const waiting = yield* Effect.forkChild(request)
      yield* TestClock.adjust("100 millis")
      expect(state.attempts).toEqual([0, 0])
      state.up = true
      yield* reachability.answered
      expect((yield* Fiber.join(waiting)).status).toBe(200)
      expect(state.attempts).toEqual([0, 0, 100])
      expect(state.lines).toEqual([saidDown, "reached http://runner-server again after 0.1 s"])
    })
  )

  it.effect("names a real transport's reason; a failure that is not the transport's is none", () =>
    Effect.gen(function* () {
      const port = yield* Effect.promise(freePort)
      const failed = yield* HttpClient.get(`http://127.0.0.1:${port}/`).pipe(Effect.flip)
      expect(transportReason(failed)).toBe("connection refused (ECONNREFUSED)")
      expect(transportReason({ _tag: "Unauthorized" })).toBeUndefined()
    }).pipe(Effect.provide(FetchHttpClient.layer))
  )
})
