// Handlers of the executor inbox: list, claim, claim check, attachment reads, extend, commit and
// progress. Claim posts (6,000 a minute) and claim reads (600 a minute; attachment reads count as
// claim reads) are counted per executor and, ten times that, per source address (the backstop).
// The commit answers the run's task row; attachment bytes stream with Cache-Control no-store.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import type { RateLimit } from "@troupe/domain/kernel/RateLimiter"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { ClaimAttachments } from "@troupe/domain/runs/ClaimAttachments"
import { BodyRefused, ExecutorInbox } from "@troupe/domain/runs/ExecutorInbox"
import { taskRowOf } from "@troupe/domain/runs/Trace"
import { create as contentDisposition } from "content-disposition"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { storedFileResponse } from "../conventions/ByteRanges.ts"
import { clientAddress } from "../conventions/ClientAddress.ts"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { consumeInOrder } from "../conventions/RateLimit.ts"
import { uploadDescriptor } from "../conventions/UploadIngest.ts"

export const claimPostLimit: RateLimit = { scope: "executor.claim_posts", limit: 6000, windowSeconds: 60 }
export const claimReadLimit: RateLimit = { scope: "executor.claim_reads", limit: 600, windowSeconds: 60 }
const backstop = (limit: RateLimit): RateLimit => ({ ...limit, scope: `${limit.scope}.ip`, limit: limit.limit * 10 })

/** A body judge's fault at its own status (400, 409, 413 or 422). */
const answerBodyFaults = <A, E, R>(effect: Effect.Effect<A, E | BodyRefused, R>) =>
  Effect.catchIf(
    effect,
    (error): error is BodyRefused => error instanceof BodyRefused,
    (fault) =>
      Effect.fail(
        fault.status === 400
          ? errors.badRequest(fault.code, fault.message)
          : fault.status === 409
            ? errors.conflict(fault.code, fault.message)
            : fault.status === 413
              ? errors.contentTooLarge(fault.message)
              : errors.unprocessable(fault.code, fault.message)
      )
  )

/** An attachment read as its route names it. */
const attachmentRead = (
  params: { readonly run_public_id: string; readonly task_key: string; readonly upload_public_id: string },
  token: string
) => ({ runId: params.run_public_id, key: params.task_key, uploadId: params.upload_public_id, token })

export const ExecutorInboxHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executorInbox",
  Effect.fn(function* (handlers) {
    const inbox = yield* ExecutorInbox
    const attachments = yield* ClaimAttachments
    const limiter = yield* RateLimiter
    const counted = (limit: RateLimit) =>
      Effect.gen(function* () {
        const { executor } = yield* CurrentExecutorCaller
        yield* consumeInOrder([
          { limit, subject: executor.publicId },
          { limit: backstop(limit), subject: yield* clientAddress }
        ])
      }).pipe(Effect.provideService(RateLimiter, limiter))

    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          const page = yield* inbox.list(executor, query.after, query.limit)
          return { tasks: page.tasks, pagination: { next_after: page.next_after } }
        }).pipe(answerRefusals)
      )
      .handle("claim", ({ params }) =>
        Effect.gen(function* () {
          yield* counted(claimPostLimit)
          const { executor } = yield* CurrentExecutorCaller
          return yield* inbox.claim(executor, params.run_public_id, params.task_key)
        }).pipe(answerRefusals)
      )
      .handle("claimCheck", ({ params, headers }) =>
        Effect.gen(function* () {
          yield* counted(claimReadLimit)
          const { executor } = yield* CurrentExecutorCaller
          const claim = yield* inbox.claimCheck(executor, params.run_public_id, params.task_key, headers["claim-token"])
          return { claim }
        }).pipe(answerRefusals)
      )
      .handle("attachment", ({ params, headers }) =>
        Effect.gen(function* () {
          yield* counted(claimReadLimit)
          const { executor } = yield* CurrentExecutorCaller
          const upload = yield* attachments.descriptor(executor, attachmentRead(params, headers["claim-token"]))
          return { upload: uploadDescriptor(upload) }
        }).pipe(answerRefusals)
      )
      .handle("attachmentBytes", ({ params, headers, request }) =>
        Effect.gen(function* () {
          yield* counted(claimReadLimit)
          const { executor } = yield* CurrentExecutorCaller
          const file = yield* answerRefusals(
            attachments.bytes(executor, attachmentRead(params, headers["claim-token"]))
          )
          return yield* storedFileResponse(request, {
            content: { path: file.path },
            size: file.byteSize,
            contentType: file.contentType,
            cacheControl: "no-store",
            disposition: contentDisposition(file.upload.filename),
            ranges: true
          })
        })
      )
      .handle("extend", ({ params, payload }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          return yield* inbox.extend(executor, params.run_public_id, params.task_key, payload)
        }).pipe(answerBodyFaults, answerRefusals)
      )
      .handle("commit", ({ params, payload }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          // A settled task's row stands on its own (its waits are met; its row keeps them).
          const task = yield* inbox.commit(executor, params.run_public_id, params.task_key, payload)
          return { task: taskRowOf(task, [task], new Map()) }
        }).pipe(answerBodyFaults, answerRefusals)
      )
      .handle("progress", ({ payload }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          return { accepted: yield* inbox.progress(executor, payload) }
        }).pipe(
          Effect.catchIf(
            (error): error is BodyRefused => error instanceof BodyRefused,
            (fault) =>
              Effect.fail(
                fault.status === 400
                  ? errors.badRequest(fault.code, fault.message)
                  : fault.status === 413
                    ? errors.contentTooLarge(fault.message)
                    : errors.unprocessable(fault.code, fault.message)
              )
          )
        )
      )
  })
)
