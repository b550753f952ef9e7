// The inference scenario: inference requests on `local/echo` ("hello there") created through the
// domain's InferenceRequests.create (what the create route calls once it has parsed the body:
// the row and the actor in one transaction), each followed to `completed` (its actor's job
// streams the answer, the steps commit, the step into `completed` is NOTIFYed on the bus), one
// request at a time per client fiber. Beside it, in the same runtime and the same rounds, the bare
// actor step: `ActorHost.send` of one event to a counter actor (scripts/bench/machine.ts), one
// actor per fiber at the same concurrency. Reading: requests/s (completed over the measured
// time), p50/p99 of accepted-to-completed (from create's answer to the completed notice) and of
// the whole create-to-completed; `ratio` = requests/s ÷ bare steps/s; a request is several steps
// (`steps/request`, counted from the journal afterwards), so `step ratio` = requests/s ×
// steps/request ÷ bare steps/s is the share of the bare step rate its steps keep.
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import { ActorHost, defaultHostOptions, type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { workspaceActor } from "@troupe/actors/bindings/workspace"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { type Caller, callerOfHuman } from "@troupe/domain/accounts/Caller"
import { InferenceRequestDefinition, InferenceRequests } from "@troupe/domain/inference/InferenceRequests"
import { ModelCatalog } from "@troupe/domain/models/ModelCatalog"
import { makeOpenAiCompatible } from "@troupe/domain/models/OpenAiCompatible"
import { Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { migratedDatabase } from "@troupe/server/Server"
import { BlobStore } from "@troupe/storage/BlobStore"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { EventBus } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { Deferred, Effect, Layer, References, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { benchDatabase } from "./database.ts"
import { benchBinding, benchKind, countEvent } from "./machine.ts"
import { alternateSides, formatTable, type Sample, type Timing } from "./measure.ts"

const levels = [1, 4, 16]
const input = "hello there"
const expectedText = `echo: ${input}`

export interface InferenceLevel {
  readonly concurrency: number
  /** Create-to-completed per request (the driver's own latencies). */
  readonly requests: Sample
  /** Accepted (create answered) to completed, per request. */
  readonly acceptedToCompleted: { readonly p50Ms: number; readonly p99Ms: number }
  readonly steps: Sample
  /** requests/s ÷ bare steps/s. */
  readonly ratio: number
  /** requests/s × steps/request ÷ bare steps/s. */
  readonly stepRatio: number
}

export interface InferenceReport {
  /** Journal rows per request (its creation's included), over every request of the run. */
  readonly stepsPerRequest: number
  /** Stream items per request. */
  readonly itemsPerRequest: number
  readonly levels: ReadonlyArray<InferenceLevel>
}

/**
 * The runtime with the counter, the workspace and the inference request, and the services creating
 * them; `dataDir` holds the blob store (no upload is named here).
 */
const layer = (database: DatabaseConfig, dataDir: string) => {
  const actors = Layer.unwrap(
    Effect.gen(function* () {
      const inferenceRequest = yield* InferenceRequestDefinition
      return runtimeLayer([benchBinding, workspaceActor, inferenceRequest], defaultHostOptions)
    })
  ).pipe(
    Layer.provideMerge(InferenceRequestDefinition.layer),
    Layer.provideMerge(ModelCatalog.layer({ remoteProvider: makeOpenAiCompatible })),
    Layer.provideMerge(BlobStore.layer(dataDir)),
    Layer.provideMerge(migratedDatabase(database))
  )
  return InferenceRequests.layer.pipe(
    Layer.provideMerge(Layer.mergeAll(Accounts.layer, Workspaces.layer)),
    Layer.provideMerge(repositoriesLayer),
    Layer.provideMerge(actors),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "Warn"))
  )
}

/** The owner (the caller) and a workspace of theirs. */
const seed = Effect.gen(function* () {
  const owner = yield* (yield* Accounts).createOwner({
    email: "inference-bench@example.com",
    password: "inference-bench-password",
    displayName: "Bench"
  })
  const caller = callerOfHuman(owner)
  const workspace = yield* (yield* Workspaces).create(caller, { name: "inference bench" })
  return { caller, workspaceId: workspace.public_id }
}).pipe(Effect.orDie)

const percentile = (values: ReadonlyArray<number>, p: number) => {
  const sorted = Float64Array.from(values).sort()
  return sorted.length === 0
    ? Number.NaN
    : sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

/**
 * Completions as the bus tells them: `completion(id)` resolves when the request's actor commits
 * its step into `completed` (a notice that comes before anyone waits is kept until asked for).
 */
const completions = Effect.gen(function* () {
  const notices = yield* (yield* EventBus).subscribe(stepChannel)
  const waiting = new Map<string, Deferred.Deferred<string>>()
  const early = new Map<string, string>()
  yield* notices.pipe(
    Stream.map((text) => JSON.parse(text) as StepNotice),
    Stream.filter((notice) => notice.kind === "inferenceRequest" && !notice.state.startsWith("live.")),
    Stream.runForEach((notice) => {
      const deferred = waiting.get(notice.actorId)
      return deferred
        ? Effect.asVoid(Deferred.succeed(deferred, notice.state))
        : Effect.sync(() => {
            early.set(notice.actorId, notice.state)
          })
    }),
    Effect.forkScoped
  )
  return (id: string) =>
    Effect.gen(function* () {
      const seen = early.get(id)
      if (seen !== undefined) {
        early.delete(id)
        return seen
      }
      const deferred = yield* Deferred.make<string>()
      waiting.set(id, deferred)
      const state = yield* Deferred.await(deferred)
      waiting.delete(id)
      return state
    })
})

const runLevel = (timing: Timing, caller: Caller, workspaceId: string, concurrency: number) =>
  Effect.gen(function* () {
    const host = yield* ActorHost
    const requests = yield* InferenceRequests
    const completion = yield* completions
    const accepted: Array<number> = []
    const request = () =>
      Effect.gen(function* () {
        const created = yield* requests
          .create(caller, workspaceId, { workload: "text_generation", model: { model: "local/echo" }, input })
          .pipe(Effect.orDie)
        const at = performance.now()
        const state = yield* completion(created.public_id)
        if (state !== "completed") return yield* Effect.die(new Error(`${created.public_id} ended ${state}`))
        accepted.push(performance.now() - at)
      })
    const clients = Array.from({ length: concurrency }, (_, index) => `client-${index}`)
    const counters = Array.from({ length: concurrency }, () => newPublicId())
    for (const actor of counters) yield* host.create(benchKind, actor, {})
    const step = (actor: string) =>
      Effect.flatMap(host.send(benchKind, actor, countEvent), (outcome) =>
        outcome._tag === "Accepted" ? Effect.void : Effect.die(new Error(`${actor}: event rejected`))
      )
    const [steps, made] = yield* alternateSides<unknown, never>(timing, [
      { actors: counters, step },
      { actors: clients, step: request }
    ])
    // Warm-up requests are in `accepted` too: the figures keep the measured ones (the last).
    const measured = accepted.slice(accepted.length - made!.steps)
    const ratio = made!.perSecond / steps!.perSecond
    return {
      concurrency,
      requests: made!,
      acceptedToCompleted: { p50Ms: percentile(measured, 50), p99Ms: percentile(measured, 99) },
      steps: steps!,
      ratio
    }
  }).pipe(Effect.scoped)

/** Journal rows and stream items per request; dies unless every request completed with the echo. */
const perRequest = Effect.gen(function* () {
  const sql = yield* SqlClient
  const [row] = yield* sql<{ requests: number; wrong: number; journal: number; items: number }>`
    SELECT (SELECT count(*)::int FROM inference_requests) AS requests,
           (SELECT count(*)::int FROM inference_requests
            WHERE status <> 'completed' OR result->>'output_text' IS DISTINCT FROM ${expectedText}) AS wrong,
           (SELECT count(*)::int FROM actor_journal WHERE kind = 'inferenceRequest') AS journal,
           (SELECT count(*)::int FROM outbox_items WHERE stream LIKE 'inference_request:%') AS items`
  if (row!.wrong > 0) return yield* Effect.die(new Error(`${row!.wrong} requests did not complete with the echo`))
  return { stepsPerRequest: row!.journal / row!.requests, itemsPerRequest: row!.items / row!.requests }
}).pipe(Effect.orDie)

const levelsOn = (timing: Timing) =>
  Effect.gen(function* () {
    const { caller, workspaceId } = yield* seed
    const measured = yield* Effect.forEach(levels, (concurrency) => runLevel(timing, caller, workspaceId, concurrency))
    const { stepsPerRequest, itemsPerRequest } = yield* perRequest
    return {
      stepsPerRequest,
      itemsPerRequest,
      levels: measured.map((level) => ({ ...level, stepRatio: level.ratio * stepsPerRequest }))
    } satisfies InferenceReport
  })

/** Every level, on a fresh database of its own (its owner is the instance's) and one runtime over it. */
export const inferenceScenario = (timing: Timing) =>
  Effect.gen(function* () {
    const database = yield* benchDatabase
    const dataDir = yield* Effect.acquireRelease(
      Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-bench-blobs-"))),
      (path) => Effect.promise(() => rm(path, { recursive: true, force: true }))
    )
    return yield* levelsOn(timing).pipe(Effect.provide(layer(database.config, dataDir)))
  }).pipe(Effect.scoped)

export const inferenceHeader =
  `Inference requests on local/echo ("${input}"), created through InferenceRequests.create and followed to ` +
  "completed on the bus, one request at a time per client; beside the bare actor step (ActorHost.send to a counter) " +
  "at the same concurrency, alternating in the same rounds"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const inferenceTable = (report: InferenceReport) =>
  [
    `steps/request ${fixed(report.stepsPerRequest, 2)} (journal rows, creation included), ` +
      `items/request ${fixed(report.itemsPerRequest, 2)}; ratio = requests/s ÷ steps/s, ` +
      "step ratio = ratio × steps/request",
    formatTable(
      [
        "clients",
        "requests/s",
        "accepted→completed p50/p99 ms",
        "create→completed p50/p99 ms",
        "bare steps/s",
        "step p50/p99 ms",
        "ratio",
        "step ratio",
        "node CPU µs/request | step"
      ],
      report.levels.map((level) => [
        String(level.concurrency),
        fixed(level.requests.perSecond, 0),
        `${fixed(level.acceptedToCompleted.p50Ms, 1)}/${fixed(level.acceptedToCompleted.p99Ms, 1)}`,
        `${fixed(level.requests.p50Ms, 1)}/${fixed(level.requests.p99Ms, 1)}`,
        fixed(level.steps.perSecond, 0),
        `${fixed(level.steps.p50Ms, 2)}/${fixed(level.steps.p99Ms, 1)}`,
        fixed(level.ratio, 3),
        fixed(level.stepRatio, 2),
        `${fixed(level.requests.cpuMicrosPerStep, 0)} | ${fixed(level.steps.cpuMicrosPerStep, 0)}`
      ])
    )
  ].join("\n")
