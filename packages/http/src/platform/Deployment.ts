// Handlers of Platform: deployment administration (JSON routes; the progress stream is
// DeploymentStream.ts). The gate (a live human owner or admin, rechecked on every request), the
// upgrade key rule, and the updater's answers at the spec's statuses: updater_unavailable and
// release_unavailable 503, admission conflicts 409, unknown upgrades 404.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { isPublicId } from "@troupe/contracts/PublicId"
import { CurrentPlatformCaller, type PlatformCaller } from "@troupe/contracts/platform/Caller"
import { DeploymentAdministrator, isUuidV7, UpgradeKey } from "@troupe/contracts/platform/Deployment"
import { Deployment } from "@troupe/domain/deployment/Deployment"
import type { UpdaterFailure } from "@troupe/domain/deployment/UpdaterErrors"
import type { Absent } from "@troupe/domain/kernel/Refusals"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder, HttpApiSchema } from "effect/http-api"

/** The refusal of a caller who is not a live human owner or admin, or undefined. */
export const deploymentRefusalOf = (caller: PlatformCaller) =>
  caller.user.role === "owner" || caller.user.role === "admin"
    ? undefined
    : errors.forbidden("not_authorized", "Only an owner or admin may administer the deployment")

export const DeploymentAdministratorLive = Layer.succeed(DeploymentAdministrator, (httpEffect) =>
  Effect.gen(function* () {
    const refusal = deploymentRefusalOf(yield* CurrentPlatformCaller)
    if (refusal !== undefined) return yield* refusal
    return yield* httpEffect
  })
)

export const UpgradeKeyLive = Layer.succeed(UpgradeKey, (httpEffect) =>
  Effect.gen(function* () {
    const key = (yield* HttpServerRequest.HttpServerRequest).headers["idempotency-key"]
    if (key === undefined || key.trim() === "") {
      return yield* errors.badRequest("idempotency_key_required", "Send an Idempotency-Key header (a fresh UUIDv7)")
    }
    if (!isUuidV7(key)) return yield* errors.parameterInvalid("Idempotency-Key must be a UUIDv7")
    return yield* httpEffect
  })
)

/** The updater's failures (and an unknown upgrade) at the spec's statuses. */
export const answerDeployment = <A, R>(effect: Effect.Effect<A, UpdaterFailure | Absent, R>) =>
  Effect.mapError(effect, (failure) =>
    failure._tag === "UpdaterUnavailable"
      ? errors.of("updater_unavailable", failure.message)
      : errors.of(failure.code, failure.message)
  )

export const upgradePath = (id: string) => `/api/v1/admin/deployment/upgrades/${encodeURIComponent(id)}`

export const DeploymentHandlers = HttpApiBuilder.group(
  TroupeApi,
  "deployment",
  Effect.fn(function* (handlers) {
    const deployment = yield* Deployment
    /** An id that is not a UUID names no upgrade: 404 without asking the updater. */
    const upgradeId = (id: string) => (isPublicId(id) ? Effect.succeed(id) : Effect.fail(errors.notFound()))
    return handlers
      .handle("show", () => answerDeployment(Effect.map(deployment.view, (view) => ({ deployment: view }))))
      .handle("releaseCheck", ({ payload }) =>
        answerDeployment(
          deployment.check(payload.release_check?.tag ?? "latest", payload.release_check?.backup ?? true)
        ).pipe(Effect.map((view) => ({ deployment: view })))
      )
      .handle("upgrade", ({ payload, request }) =>
        Effect.gen(function* () {
          const caller = yield* CurrentPlatformCaller
          const receipt = yield* answerDeployment(
            deployment.upgrade({
              idempotencyKey: request.headers["idempotency-key"] ?? "",
              actorPublicId: caller.user.publicId,
              backup: payload.backup,
              candidate: payload.candidate
            })
          )
          return HttpApiSchema.withHeaders({
            body: { upgrade: receipt },
            headers: { location: upgradePath(receipt.id) }
          })
        })
      )
      .handle("upgradeShow", ({ params }) =>
        Effect.gen(function* () {
          const id = yield* upgradeId(params.id)
          return { upgrade: yield* answerDeployment(deployment.operation(id)) }
        })
      )
      .handle("upgradeLog", ({ params, query }) =>
        Effect.gen(function* () {
          const id = yield* upgradeId(params.id)
          return { log: yield* answerDeployment(deployment.log(id, query.cursor ?? null)) }
        })
      )
  })
)
