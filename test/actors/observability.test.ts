// What the runtime tells the tracer and the logs: every step is a span named for its kind and
// event, a child of the caller's span, with the actor's address, the event, the cause and the
// outcome (and the new seq); a job is a root span, and a step a timer, a job's report or a told
// message brings is the root of its own trace, linked to the span that delivered it and to the
// step that scheduled it when its traceparent is known; every line logged inside a step, a job or
// a timer's delivery carries the actor's address.

import { ActorHost } from "@troupe/actors/ActorHost"
import type { JobRunner } from "@troupe/actors/JobRunner"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { currentTraceparent, traceStep } from "@troupe/actors/Tracing"
import { migratedDatabase } from "@troupe/server/Server"
import { newPublicId } from "@troupe/storage/Ids"
import { Clock, Effect, Exit, Layer, Logger, ManagedRuntime, Option, References, Tracer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { makeMovableClock } from "../support/clock.ts"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { workerBinding, workerControls, workerTable } from "./worker.ts"

const clock = makeMovableClock(Effect.runSync(Clock.clockWith(Effect.succeed)))
const controls = workerControls()
/** Ended spans, and what waits for one. */
const spans: Array<Tracer.Span> = []
const waiters = new Set<() => void>()
const recordingTracer = Tracer.make({
  span: (options) => {
    const span = Tracer.nativeTracer.span(options)
    const end = span.end.bind(span)
    span.end = (endTime, exit) => {
      end(endTime, exit)
      spans.push(span)
      for (const wake of waiters) wake()
    }
    return span
  }
})
const lines: Array<{ readonly message: unknown; readonly annotations: Record<string, unknown> }> = []
const recordingLogger = Logger.make(({ message, fiber }) => {
  lines.push({ message, annotations: { ...fiber.getRef(References.CurrentLogAnnotations) } })
})

let database: TestDatabase
let runtime: ManagedRuntime.ManagedRuntime<ActorHost | JobRunner | TimerRunner, never>
const run = <A, E>(effect: Effect.Effect<A, E, ActorHost | JobRunner | TimerRunner | SqlClient>) =>
  runtime.runPromise(effect as Effect.Effect<A, E, ActorHost>)

beforeAll(async () => {
  database = await freshDatabase()
  const layer = runtimeLayer([workerBinding(controls)]).pipe(
    Layer.provideMerge(migratedDatabase(database.config)),
    Layer.provideMerge(Layer.succeed(Clock.Clock, clock.clock)),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "All")),
    Layer.provideMerge(Layer.succeed(Tracer.Tracer, recordingTracer)),
    Layer.provideMerge(Logger.layer([recordingLogger]))
  )
  runtime = ManagedRuntime.make(layer) as typeof runtime
  await run(Effect.flatMap(SqlClient, (sql) => sql.unsafe(workerTable)))
})
afterAll(async () => {
  await runtime?.dispose()
  await database?.drop()
})

const newWorker = () =>
  run(
    Effect.gen(function* () {
      const id = newPublicId()
      yield* (yield* ActorHost).create("worker", id, { start: 0 })
      return id
    })
  )
const send = (id: string, event: { readonly type: string; readonly [key: string]: unknown }) =>
  run(Effect.exit(Effect.flatMap(ActorHost, (host) => host.send("worker", id, event))))

/** Resolves with the actor's span of that name once it has ended (the accepted one, if asked). */
const ended = (id: string, name: string, outcome?: string) =>
  new Promise<Tracer.Span>((resolve) => {
    const check = () => {
      const span = spans.find(
        (span) =>
          span.name === name &&
          span.attributes.get("troupe.actor.id") === id &&
          (outcome === undefined || span.attributes.get("troupe.step.outcome") === outcome)
      )
      if (span === undefined) return
      waiters.delete(check)
      resolve(span)
    }
    waiters.add(check)
    check()
  })
const stepSpan = (id: string, event: string) => ended(id, `worker ${event}`)
const attributes = (span: Tracer.Span) => Object.fromEntries(span.attributes)

describe("step spans", () => {
  it("a step sent under a caller's span is its child, named for the kind and event, with the outcome and seq", async () => {
    const id = await newWorker()
    expect(attributes(await stepSpan(id, "xstate.init"))).toMatchObject({
      "troupe.step.cause": "create",
      "troupe.step.outcome": "accepted",
      "troupe.step.seq": 1n
    })
    const caller = await run(
      Effect.flatMap(ActorHost, (host) => host.send("worker", id, { type: "count" })).pipe(
        Effect.andThen(Effect.currentSpan),
        Effect.withSpan("caller")
      )
    )
    const step = await stepSpan(id, "count")
    expect(attributes(step)).toEqual({
      "troupe.actor.kind": "worker",
      "troupe.actor.id": id,
      "troupe.event.type": "count",
      "troupe.step.cause": "send",
      "troupe.step.outcome": "accepted",
      "troupe.step.seq": 2n
    })
    expect(Option.getOrUndefined(step.parent)?.spanId).toBe(caller.spanId)
    expect(step.traceId).toBe(caller.traceId)
  })

  it("names a rejection, a veto and a quarantine as the outcome", async () => {
    const id = await newWorker()
    await send(id, { type: "fetched", body: "unasked" })
    expect((await stepSpan(id, "fetched")).attributes.get("troupe.step.outcome")).toBe("rejected")
    const other = await newWorker()
    await send(other, { type: "guarded" })
    expect((await stepSpan(other, "guarded")).attributes.get("troupe.step.outcome")).toBe("vetoed")
    const exploding = await newWorker()
    expect(Exit.isFailure(await send(exploding, { type: "explode" }))).toBe(true)
    expect((await stepSpan(exploding, "explode")).attributes.get("troupe.step.outcome")).toBe("ActorQuarantined")
  })

  it("a job is a root span; its report's step is the root of its own trace, linked to the job's span", async () => {
    const id = await newWorker()
    await run(
      Effect.flatMap(ActorHost, (host) =>
        host.send("worker", id, { type: "fetch", url: "https://example.test/a" })
      ).pipe(Effect.withSpan("caller"))
    )
    const job = await ended(id, "worker job worker.fetch")
    expect(attributes(job)).toMatchObject({ "troupe.job.name": "worker.fetch", "troupe.actor.kind": "worker" })
    expect(job.parent).toEqual(Option.none())
    const report = await stepSpan(id, "fetched")
    expect(attributes(report)).toMatchObject({ "troupe.step.cause": "job", "troupe.step.outcome": "accepted" })
    expect(report.parent).toEqual(Option.none())
    expect(report.traceId).not.toBe(job.traceId)
    expect(report.links.map((link) => [link.span.spanId, link.attributes])).toEqual([
      [job.spanId, { "troupe.link": "delivered_by" }]
    ])
  })

  it("a timer's step is the root of its own trace with its attributes, not a child of the runner's span", async () => {
    const id = await newWorker()
    await send(id, { type: "arm", delay: 1000 })
    clock.advance("2 seconds")
    const [, pass] = await run(
      Effect.all([Effect.flatMap(TimerRunner, (runner) => runner.runDue), Effect.currentSpan]).pipe(
        Effect.withSpan("timer runner pass")
      )
    )
    const step = await ended(id, "worker ping", "accepted")
    expect(attributes(step)).toEqual({
      "troupe.actor.kind": "worker",
      "troupe.actor.id": id,
      "troupe.event.type": "ping",
      "troupe.step.cause": "timer",
      "troupe.step.outcome": "accepted",
      "troupe.step.seq": 3n
    })
    expect(step.parent).toEqual(Option.none())
    expect(step.traceId).not.toBe(pass.traceId)
    // Applied under this pass, it links to the pass; the runner's own loop (under no span) may
    // have applied it first, and then the pass's delivery was stale.
    expect([[pass.spanId], []]).toContainEqual(step.links.map((link) => link.span.spanId))
  })

  it("a delivered step links to the step that scheduled it by that step's traceparent", async () => {
    const scheduler = await run(
      Effect.all([currentTraceparent, Effect.currentSpan]).pipe(Effect.withSpan("worker arm"))
    )
    expect(scheduler[0]).toBe(`00-${scheduler[1].traceId}-${scheduler[1].spanId}-01`)
    expect(await run(currentTraceparent)).toBeUndefined()
    const id = newPublicId()
    await run(Effect.succeed(undefined).pipe(traceStep("worker", id, "ping", "timer", scheduler[0])))
    const step = await stepSpan(id, "ping")
    expect(step.parent).toEqual(Option.none())
    expect(step.links.map((link) => [link.span.traceId, link.span.spanId, link.attributes])).toEqual([
      [scheduler[1].traceId, scheduler[1].spanId, { "troupe.link": "scheduled_by" }]
    ])
  })
})

describe("log lines", () => {
  it("carry the actor's address inside a step and inside a job", async () => {
    const id = await newWorker()
    await send(id, { type: "explode" })
    const failed = lines.filter((line) => String(line.message).includes(`${id} step failed`))
    expect(failed).toHaveLength(3)
    for (const line of failed) expect(line.annotations).toMatchObject({ actor_kind: "worker", actor_id: id })

    const fetching = await newWorker()
    controls.failFetch = true
    await send(fetching, { type: "fetch", url: "https://example.test/b" })
    await ended(fetching, "worker job worker.fetch")
    controls.failFetch = false
    const retried = lines.filter((line) => String(line.message).includes(`for ${fetching} failed`))
    expect(retried).toHaveLength(1)
    expect(retried[0]!.annotations).toMatchObject({ actor_kind: "worker", actor_id: fetching })
  })
})
