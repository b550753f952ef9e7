// Bearer credentials (RFC 6750): the token of an Authorization header, and the grant it
// presents. Absent, malformed, revoked, expired or fenced are all 401 unauthorized, answered with
// the RFC 6750 §3 challenge (WWW-Authenticate: Bearer, plus error="invalid_token" when a token was
// presented and refused); which plane a grant may act on is for each plane's authentication to judge.
import type { AccessGrant, Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { HttpServerRequest, type HttpServerResponse } from "effect/http"
import { envelope } from "./ErrorEnvelope.ts"

/** The token of an Authorization header value, when it is a bearer credential. */
export const bearerToken = (authorization: string | undefined) => /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1]

const challenge = 'Bearer realm="troupe"'

/** The RFC 6750 §3 challenge of a 401: error="invalid_token" when a bearer token was presented. */
export const bearerChallenge = (presented: boolean) => ({
  "www-authenticate": presented ? `${challenge}, error="invalid_token"` : challenge
})

/** The 401 of a bearer door: without a bearer token, or for a presented one it refuses. */
export const bearerRefusal = (presented: boolean): HttpServerResponse.HttpServerResponse =>
  presented
    ? envelope(401, "unauthorized", "The credential is not valid", bearerChallenge(true))
    : envelope(401, "unauthorized", "Authentication is required", bearerChallenge(false))

/** The grant of the request's bearer credential, or the door's 401 answer. */
export const presentedGrant = (
  credentials: Credentials["Service"]
): Effect.Effect<
  | { readonly _tag: "Granted"; readonly grant: AccessGrant }
  | { readonly _tag: "Refused"; readonly answer: HttpServerResponse.HttpServerResponse },
  never,
  HttpServerRequest.HttpServerRequest
> =>
  Effect.gen(function* () {
    const token = bearerToken((yield* HttpServerRequest.HttpServerRequest).headers.authorization)
    if (!token) return { _tag: "Refused", answer: bearerRefusal(false) } as const
    return yield* credentials.authenticate(token).pipe(
      Effect.match({
        onFailure: () => ({ _tag: "Refused", answer: bearerRefusal(true) }) as const,
        onSuccess: (grant) => ({ _tag: "Granted", grant }) as const
      })
    )
  })
