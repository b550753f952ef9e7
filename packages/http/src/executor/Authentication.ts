// Executor-transport authentication: a transport credential of an active address at its current
// epoch. Member and platform credentials are refused with 401 unauthorized.
import { errors } from "@troupe/contracts/Errors"
import { CurrentExecutorCaller, ExecutorAuthentication } from "@troupe/contracts/executor/Caller"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect, Layer } from "effect"
import { presentedGrant } from "../conventions/Bearer.ts"

export const ExecutorAuthenticationLive = Layer.effect(
  ExecutorAuthentication,
  Effect.gen(function* () {
    const credentials = yield* Credentials
    // The token is read by the plane's own RFC 6750 rule (presentedGrant), not the decoded credential.
    return ExecutorAuthentication.of({
      executor_bearer: (httpEffect) =>
        Effect.gen(function* () {
          const grant = yield* presentedGrant(credentials)
          const executor = grant.executor
          if (grant.plane !== "executor_transport" || !executor) {
            return yield* errors.unauthorized("The credential is not valid")
          }
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
