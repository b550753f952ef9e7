// Handlers of the executor plane's own address: GET /agent_api/v1/executor and PUT
// /agent_api/v1/executor/announcement (whole replacement; the answer is the same description,
// with the presence members the discovery row shows).
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import { type Executor, Executors } from "@troupe/domain/executors/Executors"
import { presenceFields } from "@troupe/domain/executors/Presence"
import { now } from "@troupe/domain/kernel/Now"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const executorJson = (row: Executor) => ({
  public_id: row.public_id,
  kind: row.kind,
  status: row.status,
  display_name: row.display_name,
  credential_epoch: row.credential_epoch,
  served_tools: row.announcement.tools as never,
  environment: row.announcement.environment,
  served_documents: row.announcement.documents as never
})

export const ExecutorHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executor",
  Effect.fn(function* (handlers) {
    const executors = yield* Executors
    const describe = (row: Executor) =>
      Effect.map(now, (at) => ({
        executor: { ...executorJson(row), ...presenceFields(row, at) },
        measured_at: at.toISOString()
      }))
    return handlers
      .handle("show", () =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          return yield* describe(yield* executors.find(executor.id))
        })
      )
      .handle("announce", ({ payload }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          return yield* describe(yield* answerRefusals(executors.announce(executor.id, payload)))
        })
      )
  })
)
