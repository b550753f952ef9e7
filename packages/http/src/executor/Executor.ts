// Handler of GET /agent_api/v1/executor: the address the transport credential speaks for.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import { now } from "@troupe/domain/Now"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ExecutorHandlers = HttpApiBuilder.group(TroupeApi, "executor", (handlers) =>
  handlers.handle("show", () =>
    Effect.gen(function* () {
      const { executor } = yield* CurrentExecutorCaller
      return {
        executor: {
          public_id: executor.publicId,
          kind: executor.kind,
          status: executor.status,
          display_name: executor.displayName,
          credential_epoch: executor.credentialEpoch
        },
        measured_at: (yield* now).toISOString()
      }
    })
  )
)
