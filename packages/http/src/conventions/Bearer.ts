// Bearer credentials (RFC 6750): the token of an Authorization header, and the grant it
// presents. Absent, malformed, revoked, expired or fenced are all 401 unauthorized; which plane
// a grant may act on is for each plane's authentication to judge.
import { errors } from "@troupe/contracts/Errors"
import type { Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"

/** The token of an Authorization header value, when it is a bearer credential. */
export const bearerToken = (authorization: string | undefined) => /^Bearer +(\S+) *$/i.exec(authorization ?? "")?.[1]

/** The grant of the request's bearer credential. */
export const presentedGrant = (credentials: Credentials["Service"]) =>
  Effect.gen(function* () {
    const token = bearerToken((yield* HttpServerRequest.HttpServerRequest).headers.authorization)
    if (!token) return yield* errors.unauthorized()
    return yield* credentials
      .authenticate(token)
      .pipe(Effect.mapError(() => errors.unauthorized("The credential is not valid")))
  })
