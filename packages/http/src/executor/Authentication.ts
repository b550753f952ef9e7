// Executor-transport authentication: a transport credential of an active address at its current
// epoch. Member and platform credentials are refused with 401 unauthorized (and the RFC 6750
// challenge, conventions/Bearer.ts).
import { CurrentExecutorCaller, ExecutorAuthentication } from "@troupe/contracts/executor/Caller"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect, Layer } from "effect"
import { bearerRefusal, presentedGrant } from "../conventions/Bearer.ts"

export const ExecutorAuthenticationLive = Layer.effect(
  ExecutorAuthentication,
  Effect.gen(function* () {
    const credentials = yield* Credentials
    // The token is read by the plane's own RFC 6750 rule (presentedGrant), not the decoded credential.
    return ExecutorAuthentication.of({
      executor_bearer: (httpEffect) =>
        Effect.gen(function* () {
          const presented = yield* presentedGrant(credentials)
          if (presented._tag === "Refused") return presented.answer
          const { grant } = presented
          const executor = grant.executor
          if (grant.plane !== "executor_transport" || !executor) return bearerRefusal(true)
          return yield* httpEffect.pipe(
            Effect.provideService(CurrentExecutorCaller, {
              executor: {
                id: executor.id,
                publicId: executor.public_id,
                kind: executor.kind,
                status: executor.status,
                displayName: executor.display_name,
                credentialEpoch: grant.credential.epoch ?? executor.credential_epoch,
                row: executor
              }
            })
          )
        })
    })
  })
)
