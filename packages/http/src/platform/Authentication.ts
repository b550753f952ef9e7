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
import { bearerChallenge, bearerToken } from "../conventions/Bearer.ts"
import { envelope } from "../conventions/ErrorEnvelope.ts"
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

type Refusal = ReturnType<typeof invalid>

/**
 * Who a request's platform credential acts as now, by the rule above; for routes outside the
 * HttpApi (the deployment progress stream) and for rechecks while a response is under way.
 */
export const platformCallerOfRequest = Effect.gen(function* () {
  const sessions = yield* Sessions
  const credentials = yield* Credentials
  const accessTokenCaller = (token: string): Effect.Effect<PlatformCaller, Refusal> =>
    credentials.authenticate(token).pipe(
      Effect.mapError(invalid),
      Effect.flatMap((grant) => {
        const user = grant.user
        if (grant.plane !== "platform" || !user || user.kind !== "human") return Effect.fail(invalid())
        return Effect.succeed({
          user: platformUserOf(user),
          credential: {
            kind: "access_token",
            id: grant.credential.id,
            publicId: grant.credential.public_id,
            expiresAt: grant.credential.expires_at
          }
        } satisfies PlatformCaller)
      })
    )
  const sessionCaller = (token: string, expected: "api" | "browser"): Effect.Effect<PlatformCaller, Refusal> =>
    Effect.matchEffect(sessions.authenticate(token), {
      onFailure: () => Effect.fail(invalid()),
      onSuccess: (authenticated) =>
        authenticated.session.kind === expected
          ? Effect.succeed(platformCallerOf(authenticated))
          : Effect.fail(invalid())
    })
  const callerOf = (credential: NonNullable<ReturnType<typeof presented>>) =>
    credential.via === "bearer" && credential.token.startsWith(accessTokenFormat.prefix)
      ? accessTokenCaller(credential.token)
      : sessionCaller(credential.token, credential.via === "bearer" ? "api" : "browser")
  return (request: HttpServerRequest.HttpServerRequest): Effect.Effect<PlatformCaller, Refusal> => {
    const credential = presented(request)
    return credential ? callerOf(credential) : Effect.fail(errors.unauthorized())
  }
})

/** The 401 of a platform door, with the RFC 6750 §3 challenge (error="invalid_token" for a refused bearer). */
export const platformRefusal = (
  request: HttpServerRequest.HttpServerRequest,
  refusal: { readonly error: { readonly code: string; readonly message: string } }
) =>
  envelope(
    401,
    refusal.error.code,
    refusal.error.message,
    bearerChallenge(bearerToken(request.headers.authorization) !== undefined)
  )

export const PlatformAuthenticationLive = Layer.effect(
  PlatformAuthentication,
  Effect.gen(function* () {
    const callerOfRequest = yield* platformCallerOfRequest
    // One rule judges both schemes (a present Authorization header is authoritative, with no
    // fallback to the cookie). Effect tries the schemes in the contract's order, the bearer first,
    // and a scheme that answers ends the trial: so the bearer scheme judges the request and answers
    // a refusal itself, as a 401 with the challenge; the cookie scheme is never tried.
    const authenticate = <A, E, R>(httpEffect: Effect.Effect<A, E, R>) =>
      Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
        Effect.matchEffect(callerOfRequest(request), {
          onFailure: (refusal) => Effect.succeed(platformRefusal(request, refusal)),
          onSuccess: (caller) =>
            httpEffect.pipe(
              Effect.provideService(CurrentPlatformCaller, caller),
              Effect.provideService(CallerIdentity, { key: `user:${caller.user.id}` })
            )
        })
      )
    return PlatformAuthentication.of({
      platform_bearer: authenticate,
      browser_session: authenticate
    })
  })
)
