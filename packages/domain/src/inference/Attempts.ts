// One attempt of an inference request, as its actor's job runs it: tells the actor the call began,
// streams the provider's answer to it in small batches of items (each batch one step, so every
// item is durable and replayable in order), and answers the event that ends the attempt: finished
// (its usage priced from the catalog), failed or refused. A cancellation or the deadline, seen in
// the actor's state once a second or in a refused report, cuts the call: the attempt then ends
// with no event (the actor already ended the request). Usage arithmetic for the row lives here too.

import { readFile } from "node:fs/promises"
import type { JobInfo } from "@troupe/actors/Binding"
import type { InferenceAttempts } from "@troupe/actors/bindings/inferenceRequest"
import type { InferenceRequestEvent, OutputItem } from "@troupe/machines/inferenceRequest/events"
import { newPublicId } from "@troupe/storage/Ids"
import { InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { Clock, Effect, Option, Schema, Stream } from "effect"
import { accountCostUnit } from "../budgets/Admission.ts"
import { settle } from "../budgets/Settlement.ts"
import type { ModelCatalog } from "../models/ModelCatalog.ts"
import type { ProviderCall, ProviderEvent, ProviderToolCall } from "../models/Provider.ts"
import { type UsageBlock, type UsageSummary, usageBlock, usageSummary } from "../models/Usage.ts"
import { namedBlobs, providerCallOf } from "./ProviderCalls.ts"
import { StoredCall } from "./StoredCall.ts"

/** Items of a batch wait at most this long before their step. */
const batchWindow = "25 millis"
const batchSize = 64
/** How often a running attempt looks at its actor's state (cancellation converges within 5 s). */
const watchEvery = "1 second"

/** The usage_summary before any attempt, in the account's cost unit (null while unset). */
export const emptyUsageSummary = (costUnit: string | null): UsageSummary => usageSummary(0, [], costUnit)

// The row's usage_summary and the usage blocks the machine carries are written only by this module
// (emptyUsageSummary, `priced`), so they are read back as what it wrote.
const asSummary = (summary: unknown): UsageSummary => summary as UsageSummary
const asBlock = (usage: Readonly<Record<string, unknown>>): UsageBlock => usage as unknown as UsageBlock

const itemOf = (event: ProviderEvent): OutputItem | undefined => {
  switch (event.type) {
    case "text_delta":
    case "reasoning_delta":
      return { type: event.type, payload: { text: event.text } }
    case "tool_call_started":
      return {
        type: "provider_output_item_started",
        payload: { index: event.index, item: { type: "function_call", call_id: event.callId, name: event.name } }
      }
    case "tool_call_delta":
      return { type: "provider_output_item_delta", payload: { index: event.index, delta: event.delta } }
    case "tool_call_completed":
      return {
        type: "provider_output_item_completed",
        payload: {
          index: event.index,
          item: { type: "function_call", call_id: event.callId, name: event.name, arguments: event.arguments }
        }
      }
    default:
      return undefined
  }
}

class Cut extends Schema.TaggedError<Cut>()("Cut", {}) {}

/**
 * The attempts of the catalog's models; `blobPath` is where an upload's bytes are kept (the blob
 * store), read when an attempt sends them.
 */
export const makeInferenceAttempts = (
  catalog: ModelCatalog["Service"],
  blobPath: (sha256: string) => string
): InferenceAttempts => {
  /** The attempt's usage block, priced in the account's cost unit as it reads now. */
  const priced = (model: string, usage: Parameters<typeof usageBlock>[1]) =>
    Effect.map(accountCostUnit, (unit) => usageBlock(newPublicId(), usage, catalog.find(model)?.pricing ?? null, unit))

  const run: InferenceAttempts["run"] = (row, attempt, job: JobInfo) =>
    Effect.gen(function* () {
      const started = yield* job.report({ type: "inference.started", attempt: attempt.attempt })
      if (started === "refused") return undefined
      const model = catalog.find(attempt.model)
      const stored = yield* Schema.decodeUnknownEffect(StoredCall)(row.request).pipe(Effect.orDie)
      const blobs = new Map<string, Uint8Array>()
      for (const sha256 of namedBlobs(stored)) {
        const bytes = yield* Effect.tryPromise(() => readFile(blobPath(sha256)))
        blobs.set(sha256, bytes)
      }
      const call: ProviderCall = {
        ...providerCallOf(stored, (sha256) => blobs.get(sha256)!),
        modelRef: attempt.model,
        upstreamModel: model?.upstream_model ?? attempt.model.slice(attempt.model.indexOf("/") + 1),
        attempt: attempt.attempt,
        earlierAttemptsOnModel: attempt.earlierAttemptsOnModel
      }
      const provider = yield* Effect.option(catalog.providerFor(attempt.model))
      if (Option.isNone(provider)) {
        return { type: "inference.failed", attempt: attempt.attempt, code: "provider_model_unavailable" } as const
      }
      const began = yield* Clock.currentTimeMillis
      let firstToken: number | undefined
      const toolCalls: Array<ProviderToolCall> = []
      const files: Array<{ index: number; filename: string; content_type: string; byte_size: number }> = []
      let embeddings: ReadonlyArray<{ readonly index: number; readonly vector: ReadonlyArray<number> }> | undefined
      let finished: Extract<ProviderEvent, { type: "finished" }> | undefined
      const requests = yield* InferenceRequestsRepository.make

      const handleBatch = (events: ReadonlyArray<ProviderEvent>) =>
        Effect.gen(function* () {
          const items: Array<OutputItem> = []
          for (const event of events) {
            const item = itemOf(event)
            if (item) items.push(item)
            if ((event.type === "text_delta" || event.type === "reasoning_delta") && firstToken === undefined) {
              firstToken = yield* Clock.currentTimeMillis
            }
            if (event.type === "tool_call_completed") {
              toolCalls.push({ callId: event.callId, name: event.name, arguments: event.arguments })
            } else if (event.type === "output_file") {
              yield* requests.putOutputFile(row.public_id, {
                index: event.index,
                filename: event.filename,
                content_type: event.contentType,
                bytes: event.bytes
              })
              files.push({
                index: event.index,
                filename: event.filename,
                content_type: event.contentType,
                byte_size: event.bytes.byteLength
              })
            } else if (event.type === "embeddings") {
              embeddings = event.embeddings
            } else if (event.type === "finished") {
              finished = event
            }
          }
          if (items.length === 0) return
          const taken = yield* job.report({ type: "inference.output", attempt: attempt.attempt, items })
          if (taken === "refused") return yield* Effect.fail(new Cut())
        })

      // The attempt is cut when its actor left `running` (canceled, timed out) while it waited.
      const watch = Effect.gen(function* () {
        for (;;) {
          yield* Effect.sleep(watchEvery)
          const state = yield* job.actorState
          if (state !== "live.running") return yield* Effect.fail(new Cut())
        }
      })

      const streamed = provider.value
        .call(call)
        .pipe(Stream.groupedWithin(batchSize, batchWindow), Stream.runForEach(handleBatch))
      const ended = yield* Effect.raceFirst(streamed, watch).pipe(
        Effect.map(() => "finished" as const),
        Effect.catchTags({
          Cut: () => Effect.succeed("cut" as const),
          ProviderFailure: (failure) =>
            Effect.as(
              Effect.logWarning(
                `${attempt.model} attempt ${attempt.attempt} failed: ${failure.code} (${failure.detail})`
              ),
              {
                type: "inference.failed",
                attempt: attempt.attempt,
                code: failure.code,
                ...(failure.retryAfterMs === undefined ? {} : { retryAfterMs: failure.retryAfterMs })
              } as const
            ),
          ProviderRefusal: (refusal) =>
            Effect.map(
              priced(attempt.model, {
                inputTokens: refusal.inputTokens,
                outputTokens: 0,
                reasoningTokens: 0,
                cacheReadTokens: 0,
                cacheCreationTokens: 0
              }),
              (usage) =>
                ({
                  type: "inference.refused",
                  attempt: attempt.attempt,
                  kind: refusal.kind,
                  ...(refusal.category === undefined ? {} : { category: refusal.category }),
                  usage: { ...usage }
                }) as const
            )
        })
      )
      if (ended === "cut") return undefined
      if (ended !== "finished") return ended satisfies InferenceRequestEvent
      if (finished === undefined) {
        return { type: "inference.failed", attempt: attempt.attempt, code: "provider_error" } as const
      }
      const ends = yield* Clock.currentTimeMillis
      const timing = {
        duration_ms: ends - began,
        ...(firstToken === undefined ? {} : { time_to_first_token_ms: firstToken - began })
      }
      return {
        type: "inference.finished",
        attempt: attempt.attempt,
        usage: { ...(yield* priced(attempt.model, finished.usage)) },
        outcome: {
          ...(finished.finishQuality === undefined ? {} : { finish_quality: finished.finishQuality }),
          timing,
          ...(toolCalls.length === 0
            ? {}
            : {
                tool_calls: toolCalls.map((tool) => ({
                  call_id: tool.callId,
                  name: tool.name,
                  arguments: tool.arguments
                }))
              }),
          ...(embeddings === undefined
            ? {}
            : { embeddings: embeddings.map((e) => ({ index: e.index, vector: e.vector })) }),
          ...(files.length === 0 ? {} : { output_files: files })
        }
      } as const
    })

  return {
    run,
    countAttempt: (summary) => {
      const current = asSummary(summary)
      return { ...current, request_count: current.request_count + 1 }
    },
    addUsage: (summary, usage) => {
      const current = asSummary(summary)
      const earlier: UsageBlock = { ...current, usage_record_public_id: "" }
      const block = asBlock(usage)
      return usageSummary(current.request_count, [earlier, block], block.cost_unit ?? current.cost_unit)
    },
    settle
  }
}
