// Handlers of the executor plane's own address: GET /agent_api/v1/executor and PUT
// /agent_api/v1/executor/announcement (whole replacement; the answer is the same description,
// with the presence members the discovery row shows).
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import { validateAnnouncement } from "@troupe/domain/Announcements"
import { now } from "@troupe/domain/Now"
import { presenceFields } from "@troupe/domain/Presence"
import * as Executors from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql/SqlClient"

export const executorJson = (row: Executors.ExecutorRow) => ({
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
    const sql = yield* SqlClient
    const db = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
      effect.pipe(Effect.orDie, Effect.provideService(SqlClient, sql))
    const describe = (row: Executors.ExecutorRow) =>
      Effect.map(now, (at) => ({
        executor: { ...executorJson(row), ...presenceFields(row, at) },
        measured_at: at.toISOString()
      }))
    return handlers
      .handle("show", () =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          return yield* describe((yield* db(Executors.findExecutorById(executor.id)))!)
        })
      )
      .handle("announce", ({ payload }) =>
        Effect.gen(function* () {
          const { executor } = yield* CurrentExecutorCaller
          const validated = validateAnnouncement(payload)
          if (validated._tag === "Refused") {
            const { refusal } = validated
            return yield* refusal.status === 413
              ? Effect.fail(errors.contentTooLarge(refusal.message))
              : refusal.status === 422
                ? Effect.fail(errors.unprocessable(refusal.code, refusal.message))
                : Effect.fail(errors.badRequest(refusal.code, refusal.message))
          }
          const row = yield* db(Executors.replaceAnnouncement(executor.id, validated.announcement, yield* now))
          return yield* describe(row)
        })
      )
  })
)
