// The executor upload door (POST /agent_api/v1/executor/uploads): the member door's multipart
// ingest (conventions/UploadIngest.ts) with the executor as creator, counted against its budget.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentExecutorCaller } from "@troupe/contracts/executor/Caller"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { UploadRequestLimit, Uploads } from "@troupe/domain/uploads/Uploads"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { uploadAtDoor } from "../conventions/UploadIngest.ts"

export const ExecutorUploadsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executorUploads",
  Effect.fn(function* (handlers) {
    const uploads = yield* Uploads
    const limiter = yield* RateLimiter
    const limit = yield* UploadRequestLimit
    return handlers.handleRaw("create", () =>
      Effect.gen(function* () {
        const { executor } = yield* CurrentExecutorCaller
        return yield* uploadAtDoor({ kind: "executor", executorId: executor.id }, `executor:${executor.id}`).pipe(
          Effect.provideService(Uploads, uploads),
          Effect.provideService(RateLimiter, limiter),
          Effect.provideService(UploadRequestLimit, limit)
        )
      })
    )
  })
)
