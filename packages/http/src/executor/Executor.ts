// Handlers of the executor plane's own address: GET /agent_api/v1/executor and PUT
// /agent_api/v1/executor/announcement (whole replacement, decoded by the contract; the answer is
// the same description, with the presence members the discovery row shows, encoded by it too).
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import { Executors } from "@troupe/domain/executors/Executors"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ExecutorHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executor",
  Effect.fn(function* (handlers) {
    const executors = yield* Executors
    return handlers
      .handle("show", () => Effect.flatMap(CurrentExecutorCaller, ({ executor }) => executors.describe(executor)))
      .handle("announce", ({ payload }) =>
        Effect.flatMap(CurrentExecutorCaller, ({ executor }) =>
          executors
            .announce(executor, payload)
            .pipe(Effect.catchTag("Unauthenticated", () => errors.unauthorized("The credential is not valid")))
        )
      )
  })
)
