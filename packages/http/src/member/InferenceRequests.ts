// Handlers of Member: inference requests. Bodies arrive decoded by the contract's schemas; the
// domain judges them against the catalog and answers projections the contract encodes.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CallerIdentity, ReplayedAcceptance } from "@troupe/contracts/Idempotency"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { InferenceRequestBudget } from "@troupe/contracts/member/InferenceRequests"
import {
  InferenceRequestLimit,
  InferenceRequests,
  type InferenceRequestView,
  type OutputFile
} from "@troupe/domain/inference/InferenceRequests"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { create as contentDisposition } from "content-disposition"
import { Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { storedFileResponse } from "../conventions/ByteRanges.ts"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { pageOf, parsePage, publicIdKey } from "../conventions/Pagination.ts"
import { consume } from "../conventions/RateLimit.ts"

const workloads = new Set(["text_generation", "image_generation", "speech_generation", "embedding", "transcription"])
const one = (inference_request: InferenceRequestView) => ({ inference_request })

/** The public id a stored acceptance names (a replay answers that request as it stands). */
const acceptedId = (body: string): string => {
  const answer: { inference_request?: { public_id?: unknown } } = JSON.parse(body)
  return String(answer.inference_request?.public_id)
}

/** An output file as an attachment (the upload bytes' Range rules; not cached: the request may go). */
const bytesResponse = (request: HttpServerRequest.HttpServerRequest, file: OutputFile) =>
  storedFileResponse(request, {
    content: { bytes: file.bytes },
    size: file.bytes.byteLength,
    contentType: file.content_type,
    cacheControl: "no-store",
    disposition: contentDisposition(file.filename),
    ranges: true
  })

/** The events page size: default 100, 1 to 200. */
const eventsLimit = (limit: string | undefined) =>
  limit === undefined
    ? Effect.succeed(100)
    : /^\d{1,3}$/.test(limit) && Number(limit) >= 1 && Number(limit) <= 200
      ? Effect.succeed(Number(limit))
      : errors.parameterInvalid("limit must be an integer from 1 to 200")

/** Counts the request against its door's budget (scope `inference_requests.<door>`). */
export const InferenceRequestBudgetLive = Layer.effect(
  InferenceRequestBudget,
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    const limit = yield* InferenceRequestLimit
    return (httpEffect, { endpoint }) =>
      Effect.gen(function* () {
        const caller = yield* CallerIdentity
        yield* consume({ ...limit, scope: `${limit.scope}.${endpoint.identifier}` }, caller.key).pipe(
          Effect.provideService(RateLimiter, limiter)
        )
        return yield* httpEffect
      })
  })
)

export const InferenceRequestsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "inferenceRequests",
  Effect.fn(function* (handlers) {
    const requests = yield* InferenceRequests
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)

    return handlers
      .handle("list", ({ params, query }) =>
        Effect.gen(function* () {
          if (query.workload !== undefined && !workloads.has(query.workload)) {
            return yield* errors.parameterInvalid("workload is not a workload")
          }
          const page = yield* parsePage(query, publicIdKey)
          const rows = yield* requests.list(yield* CurrentMemberCaller, params.workspace_id, {
            workload: query.workload,
            after: page.after?.[0],
            order: page.order,
            limit: page.limit + 1
          })
          const result = pageOf(rows, page, (row) => [row.public_id])
          return { inference_requests: result.items, pagination: result.pagination }
        }).pipe(answerRefusals)
      )
      .handle("create", ({ params, payload }) =>
        Effect.flatMap(Effect.serviceOption(ReplayedAcceptance), (replayed) =>
          command((caller) =>
            Option.isSome(replayed)
              ? requests.read(caller, params.workspace_id, acceptedId(replayed.value.body))
              : requests.create(caller, params.workspace_id, payload.inference_request)
          )
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("estimate", ({ params, payload }) =>
        command((caller) => requests.estimate(caller, params.workspace_id, payload.input_estimate)).pipe(
          Effect.map((input_estimate) => ({ input_estimate })),
          answerRefusals
        )
      )
      .handle("show", ({ params }) =>
        command((caller) => requests.read(caller, params.workspace_id, params.inference_request_id)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("cancel", ({ params }) =>
        command((caller) => requests.cancel(caller, params.workspace_id, params.inference_request_id)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("remove", ({ params }) =>
        command((caller) => requests.remove(caller, params.workspace_id, params.inference_request_id)).pipe(
          answerRefusals
        )
      )
      .handle("file", ({ params, request }) =>
        Effect.gen(function* () {
          const index = /^\d{1,4}$/.test(params.index) ? Number(params.index) : -1
          if (index < 0) return yield* errors.notFound()
          const file = yield* command((caller) =>
            requests.outputFile(caller, params.workspace_id, params.inference_request_id, index)
          )
          return yield* bytesResponse(request, file)
        }).pipe(answerRefusals)
      )
      .handle("events", ({ params, query }) =>
        Effect.gen(function* () {
          const limit = yield* eventsLimit(query.limit)
          const page = yield* requests.events(
            yield* CurrentMemberCaller,
            params.workspace_id,
            params.inference_request_id,
            query.after,
            limit
          )
          return { events: page.items, pagination: page.pagination }
        }).pipe(answerRefusals)
      )
  })
)
