// Handlers of Platform: session, and the sign-in door middleware.
import { TroupeApi } from "@troupe/contracts/Api"
import { type BadRequest, errors, type Unauthorized } from "@troupe/contracts/Errors"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { SessionDoor } from "@troupe/contracts/platform/Session"
import { Sessions } from "@troupe/domain/accounts/Sessions"
import { RateLimiter, sessionLoginLimit } from "@troupe/domain/kernel/RateLimiter"
import { Effect, Layer, type Types } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder, HttpApiError } from "effect/http-api"
import { clientAddress } from "../conventions/ClientAddress.ts"
import { consume } from "../conventions/RateLimit.ts"
import { describeDecodeFailure } from "../conventions/SchemaIssues.ts"

const badRequest = () => errors.badRequest("bad_request", "The request body must be a JSON object")

export const SessionDoorLive = Layer.effect(
  SessionDoor,
  Effect.gen(function* () {
    const limiter = yield* RateLimiter
    return (httpEffect) =>
      Effect.gen(function* () {
        yield* consume(sessionLoginLimit, yield* clientAddress).pipe(Effect.provideService(RateLimiter, limiter))
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = new URL(request.url, "http://troupe.invalid").searchParams
        if (query.has("email") || query.has("password")) return yield* errors.invalidCredentials()
        const response = yield* Effect.catch(
          httpEffect,
          (error): Effect.Effect<never, BadRequest | Unauthorized | Types.unhandled> =>
            HttpApiError.HttpApiSchemaError.is(error)
              ? Effect.fail(describeDecodeFailure(error).malformedJson ? badRequest() : errors.invalidCredentials())
              : Effect.fail(error)
        )
        return response.status === 415 ? yield* badRequest() : response
      })
  })
)

export const SessionHandlers = HttpApiBuilder.group(
  TroupeApi,
  "session",
  Effect.fn(function* (handlers) {
    const sessions = yield* Sessions
    return handlers
      .handle("create", ({ payload }) =>
        sessions.signIn(payload.email, payload.password, "api").pipe(
          Effect.mapError(() => errors.invalidCredentials()),
          Effect.map((signedIn) => ({
            session: signedIn.session,
            token: signedIn.token,
            token_type: "Bearer" as const
          }))
        )
      )
      .handle("show", () =>
        Effect.gen(function* () {
          const { credential } = yield* CurrentPlatformCaller
          // An access token is no session: the spec answers 404 here.
          if (credential.kind !== "session") return yield* errors.notFound()
          return {
            session: { public_id: credential.publicId, kind: credential.sessionKind, expires_at: credential.expiresAt }
          }
        })
      )
      .handle("revoke", () =>
        Effect.gen(function* () {
          const { credential } = yield* CurrentPlatformCaller
          if (credential.kind !== "session") return yield* errors.notFound()
          yield* sessions.revoke(credential.publicId)
          return { revoked: true as const }
        })
      )
  })
)
