// The inference request binding, the only writer of an inference request's row after its insertion
// at acceptance: status, the current attempt's streamed text and reasoning, usage_summary (its
// request_count counts attempts as they start), the result, the tombstone and the reap; it also
// publishes an attempt's announcement (a run round's round_started frame) when its step commits.
// The provider call of each attempt is a job; what it does is the domain's (`InferenceAttempts`,
// given when the server assembles its bindings): this binding knows rows, not providers.
import { inferenceRequestEffects as fx } from "@troupe/machines/inferenceRequest/effects"
import type { InferenceRequestEvent } from "@troupe/machines/inferenceRequest/events"
import { machines } from "@troupe/machines/registry"
import { type InferenceRequestRow, InferenceRequestsRepository } from "@troupe/storage/repositories/InferenceRequests"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import { defineActor, type JobInfo, type StepInfo, TransactionalActors } from "../Binding.ts"
import type { CableMessage } from "./run.ts"

/** The holder kind of an inference request's upload namings (its uploads live while it does). */
export const uploadNamingKind = "inference_request"

/** The domain's side of an attempt and of usage arithmetic. */
export interface InferenceAttempts {
  /**
   * Runs one attempt's provider call for the request `row`, reporting its progress through `job`;
   * answers the event that ends the attempt (none when the request no longer wants it).
   */
  readonly run: (
    row: InferenceRequestRow,
    attempt: { readonly attempt: number; readonly model: string; readonly earlierAttemptsOnModel: number },
    job: JobInfo
  ) => Effect.Effect<InferenceRequestEvent | undefined, unknown, SqlClient>
  /** The usage_summary after one more attempt started. */
  readonly countAttempt: (summary: unknown) => unknown
  /** The usage_summary with a billed attempt's usage block added. */
  readonly addUsage: (summary: unknown, usage: Readonly<Record<string, unknown>>) => unknown
  /** Settles a billed attempt's usage against the budget that admitted the request, in the step. */
  readonly settle: (
    requestPublicId: string,
    usage: Readonly<Record<string, unknown>>,
    now: Date
  ) => Effect.Effect<void, SqlError, SqlClient>
}

const rowOf = (step: StepInfo) =>
  Effect.flatMap(InferenceRequestsRepository.make, (requests) =>
    Effect.flatMap(requests.findRequest(step.actorId), (row) =>
      row ? Effect.succeed({ requests, row }) : Effect.die(new Error(`no inference request row for ${step.actorId}`))
    )
  )

const textOf = (
  items: ReadonlyArray<{ readonly type: string; readonly payload: Record<string, unknown> }>,
  type: string
) =>
  items
    .filter((item) => item.type === type)
    .map((item) => (typeof item.payload.text === "string" ? item.payload.text : ""))
    .join("")

/**
 * `publishOnCommit` carries announcements (the bus path a run's own progress frames take).
 */
export const inferenceRequestActor = (
  attempts: InferenceAttempts,
  publishOnCommit: (messages: ReadonlyArray<CableMessage>) => Effect.Effect<void, never, SqlClient>
) =>
  defineActor({
    kind: "inferenceRequest",
    entry: machines.inferenceRequest,
    resourceType: "inference_request",
    stream: (actorId) => `inference_request:${actorId}`,
    rows: {
      [fx.recordStatus]: (params, step) =>
        params.status === "running"
          ? Effect.gen(function* () {
              const { requests, row } = yield* rowOf(step)
              const summary = attempts.countAttempt(row.usage_summary)
              yield* requests.setRunning(step.actorId, JSON.stringify(summary), step.now)
            })
          : Effect.flatMap(InferenceRequestsRepository.make, (requests) =>
              requests.setStatus(step.actorId, params.status, step.now)
            ),
      [fx.appendOutput]: (params, step) =>
        Effect.flatMap(InferenceRequestsRepository.make, (requests) =>
          requests.appendOutput(
            step.actorId,
            textOf(params.items, "text_delta"),
            textOf(params.items, "reasoning_delta"),
            step.now
          )
        ),
      [fx.dropOutput]: (_, step) =>
        Effect.flatMap(InferenceRequestsRepository.make, (requests) => requests.dropOutput(step.actorId, step.now)),
      [fx.recordUsage]: (params, step) =>
        Effect.gen(function* () {
          const { requests, row } = yield* rowOf(step)
          const summary = attempts.addUsage(row.usage_summary, params.usage)
          yield* requests.setUsageSummary(step.actorId, JSON.stringify(summary), step.now)
          yield* attempts.settle(step.actorId, params.usage, step.now)
        }),
      [fx.recordResult]: (params, step) =>
        Effect.gen(function* () {
          const requests = yield* InferenceRequestsRepository.make
          const { outcome, ...decided } = params
          // A completed text generation answers its streamed text (empty when nothing streamed) and
          // any result its reasoning: the statement reads both from the row.
          const result = {
            ...decided,
            ...(outcome?.timing === undefined ? {} : { timing: outcome.timing }),
            ...(outcome?.tool_calls === undefined ? {} : { tool_calls: outcome.tool_calls }),
            ...(outcome?.embeddings === undefined ? {} : { embeddings: outcome.embeddings }),
            ...(outcome?.output_files === undefined ? {} : { output_files: outcome.output_files })
          }
          yield* requests.setResult(step.actorId, JSON.stringify(result), params.status === "completed", step.now)
        }),
      [fx.recordTombstone]: (_, step) =>
        Effect.flatMap(InferenceRequestsRepository.make, (requests) => requests.tombstone(step.actorId, step.now)),
      [fx.replyToAsker]: (params) =>
        Effect.flatMap(TransactionalActors, (actors) => actors.reply(params.to, params.event)),
      [fx.announceAttempt]: (params, step) =>
        publishOnCommit([
          { channel: params.channel, payload: JSON.stringify({ ...params.frame, at: step.now.toISOString() }) }
        ]),
      [fx.reapRow]: (_, step) =>
        Effect.gen(function* () {
          const { requests, row } = yield* rowOf(step)
          yield* (yield* UploadsRepository.make).removeNamings(uploadNamingKind, row.id)
          yield* requests.deleteRequest(step.actorId)
        })
    },
    jobs: {
      [fx.callProvider]: (params, job) =>
        Effect.gen(function* () {
          const requests = yield* InferenceRequestsRepository.make
          const row = yield* requests.findRequest(job.actorId)
          if (!row) return undefined
          // An earlier run of this attempt died holding its lease (or failed) after its call
          // began (the actor is running): what it streamed is dropped and the request goes on
          // with another attempt. One that ended before its call began (the actor still queued,
          // nothing streamed) left nothing to drop: this run makes the call.
          if (job.attempt > 1 && (yield* job.actorState) !== "live.queued") {
            return { type: "inference.lost" as const, attempt: params.attempt }
          }
          return yield* attempts.run(row, params, job)
        })
    }
  })

export type InferenceRequestActor = ReturnType<typeof inferenceRequestActor>
