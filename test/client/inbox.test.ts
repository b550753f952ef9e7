// @troupe/client's `inboxWork` against a stand-in executor plane (test/cli/fake-executor-plane.ts):
// when only the cable drops it says once that polling carries the work, and the rows still come;
// when the whole server is out of reach it says no such thing, hands the failed reads to
// `onReadFailed` and logs nothing itself.
import { fixedBearer } from "@troupe/client/Bearer"
import { type InboxReadError, inboxWork } from "@troupe/client/Inbox"
import { Effect, Fiber, Logger, Redacted, Stream } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterEach, beforeEach, expect, it } from "vitest"
import { type FakePlane, startFakePlane } from "../cli/fake-executor-plane.ts"
import { Inbox } from "../http/cable/support-cable.ts"

type Heard =
  | { readonly what: "subscribed" | "dropped" | "polling" | "logged" }
  | { readonly what: "read failed"; readonly error: InboxReadError }
  | { readonly what: "row"; readonly key: string }

let plane: FakePlane
let heard: Inbox
let said: Array<Heard["what"]>
let working: Fiber.Fiber<void, unknown>

beforeEach(async () => {
  plane = await startFakePlane()
  heard = new Inbox()
  said = []
  const hear = (event: Heard) =>
    Effect.sync(() => {
      said.push(event.what)
      heard.push(event)
    })
  working = Effect.runFork(
    inboxWork({
      baseUrl: plane.baseUrl,
      bearer: fixedBearer(Redacted.make(plane.tokens.access)),
      pollInterval: "100 millis",
      onConnection: (up) => hear({ what: up ? "subscribed" : "dropped" }),
      onPolling: hear({ what: "polling" }),
      onReadFailed: (error) => hear({ what: "read failed", error })
    }).pipe(
      Stream.runForEach((task) => hear({ what: "row", key: task.task_key })),
      Effect.provide(FetchHttpClient.layer),
      Effect.provideService(Logger.CurrentLoggers, new Set([Logger.make(() => said.push("logged"))]))
    )
  )
  await heard.take((event: Heard) => event.what === "subscribed")
})
afterEach(async () => {
  await Effect.runPromise(Fiber.interrupt(working))
  await plane.close()
})

const next = (what: Heard["what"]) => heard.take((event: Heard) => event.what === what)

const row = (key: string) => ({
  kind: "tool_call",
  run_public_id: "01900000-0000-7000-8000-000000000001",
  task_key: key,
  tool_name: "shout",
  timeout_ms: 10_000
})

it("falls back to polling when only the cable drops, says so once, and subscribes again", async () => {
  plane.dropSockets()
  await next("polling")
  plane.add(row("polled"), false)
  expect(await next("row")).toEqual({ what: "row", key: "polled" })
  await next("subscribed")
  expect(said.filter((what) => what !== "row")).toEqual(["subscribed", "dropped", "polling", "subscribed"])
})

it("says nothing of polling while the whole server is out of reach, and hands its failed reads on", async () => {
  await plane.goDown()
  const failed = await next("read failed")
  expect(failed.error).toMatchObject({ _tag: "HttpClientError", reason: { _tag: "TransportError" } })
  await next("read failed")
  plane.add(row("after"), false)
  await plane.comeBack()
  await next("subscribed")
  expect(await next("row")).toEqual({ what: "row", key: "after" })
  expect(said.filter((what) => what === "polling" || what === "logged")).toEqual([])
})
