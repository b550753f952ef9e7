// Platform-plane authentication (spec "Platform plane"). A present Authorization header is
// authoritative: it must carry a live API session bearer or a platform access token (the
// application client's human lineage, or a personal token), with no fallback to the cookie.
// Without one, the browser session cookie authorizes safe, same-site reads only. Member and
// transport credentials are refused.
import { errors } from "@troupe/contracts/Errors"
import { CallerIdentity } from "@troupe/contracts/Idempotency"
import { CurrentPlatformCaller, PlatformAuthentication, type PlatformCaller } from "@troupe/contracts/platform/Caller"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { accessTokenFormat } from "@troupe/domain/accounts/OpaqueTokens"
import { type Authenticated, Sessions } from "@troupe/domain/accounts/Sessions"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { bearerToken } from "../conventions/Bearer.ts"
import { sessionCookie } from "../web/Cookies.ts"

/** The human a platform credential acts for, as the caller sees it. */
const platformUserOf = (user: Authenticated["user"]): PlatformCaller["user"] => ({
  id: user.id,
  publicId: user.public_id,
  role: user.role,
  email: user.email ?? "",
  displayName: user.display_name,
  handle: user.handle
})

/** The platform caller an authenticated session acts as. */
export const platformCallerOf = ({ session, user }: Authenticated): PlatformCaller => ({
  user: platformUserOf(user),
  credential: {
    kind: "session",
    id: session.id,
    publicId: session.public_id,
    sessionKind: session.kind,
    expiresAt: session.expires_at
  }
})

const presented = (request: HttpServerRequest.HttpServerRequest) => {
  const authorization = request.headers.authorization
  if (authorization !== undefined) {
    const token = bearerToken(authorization)
    return token === undefined ? undefined : { token, via: "bearer" as const }
  }
  const safe = request.method === "GET" || request.method === "HEAD"
  const token = request.cookies[sessionCookie]
  if (!safe || token === undefined || request.headers["sec-fetch-site"] === "cross-site") return undefined
  return { token, via: "cookie" as const }
}

const invalid = () => errors.unauthorized("The credential is not valid")

export const PlatformAuthenticationLive = Layer.effect(
  PlatformAuthentication,
  Effect.gen(function* () {
    const sessions = yield* Sessions
    const credentials = yield* Credentials
    const callerOf = (credential: NonNullable<ReturnType<typeof presented>>) =>
      Effect.gen(function* () {
        if (credential.via === "bearer" && credential.token.startsWith(accessTokenFormat.prefix)) {
          const grant = yield* credentials.authenticate(credential.token).pipe(Effect.mapError(invalid))
          const user = grant.user
          if (grant.plane !== "platform" || !user || user.kind !== "human") return yield* invalid()
          return {
            user: platformUserOf(user),
            credential: {
              kind: "access_token",
              id: grant.credential.id,
              publicId: grant.credential.public_id,
              expiresAt: grant.credential.expires_at
            }
          } satisfies PlatformCaller
        }
        const authenticated = yield* sessions.authenticate(credential.token).pipe(Effect.mapError(invalid))
        const expected = credential.via === "bearer" ? "api" : "browser"
        if (authenticated.session.kind !== expected) return yield* invalid()
        return platformCallerOf(authenticated)
      })
    const authenticate = <A, E, R>(httpEffect: Effect.Effect<A, E, R>) =>
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const credential = presented(request)
        if (!credential) return yield* errors.unauthorized()
        const caller = yield* callerOf(credential)
        return yield* httpEffect.pipe(
          Effect.provideService(CurrentPlatformCaller, caller),
          Effect.provideService(CallerIdentity, { key: `user:${caller.user.id}` })
        )
      })
    // One rule judges both schemes (a present Authorization header is authoritative, with no
    // fallback to the cookie). Effect tries the schemes in order and answers with the last one's
    // failure, so the cookie scheme steps aside and the bearer scheme, tried last, judges both.
    // Its failure is never answered, so one made here serves every request.
    const stepAside = Effect.fail(errors.unauthorized())
    return PlatformAuthentication.of({
      browser_session: () => stepAside,
      platform_bearer: authenticate
    })
  })
)
