// The browser session behind a page request: the session cookie, when it names a live browser
// session; and the cookie that carries it.
import { Sessions, sessionLifeMillis } from "@troupe/domain/accounts/Sessions"
import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { sessionCookie } from "./Cookies.ts"
import { WebConfig } from "./WebConfig.ts"

export const currentBrowserSession = Effect.gen(function* () {
  const request = yield* HttpServerRequest.HttpServerRequest
  const token = request.cookies[sessionCookie]
  if (!token) return Option.none()
  const sessions = yield* Sessions
  return yield* sessions.authenticate(token).pipe(
    Effect.map((found) => (found.session.kind === "browser" ? Option.some(found) : Option.none())),
    Effect.orElseSucceed(() => Option.none())
  )
})

/** The human behind the page request's browser session, or undefined when signed out. */
export const signedInHuman = Effect.map(currentBrowserSession, (current) =>
  Option.isNone(current) ? undefined : current.value.user
)

export const withSessionCookie = (response: HttpServerResponse.HttpServerResponse, token: string) =>
  Effect.map(WebConfig, (config) =>
    HttpServerResponse.setCookieUnsafe(response, sessionCookie, token, {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      secure: config.secureCookies,
      maxAge: `${sessionLifeMillis} millis`
    })
  )

export const withoutSessionCookie = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.map(WebConfig, (config) =>
    HttpServerResponse.setCookieUnsafe(response, sessionCookie, "", {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      secure: config.secureCookies,
      maxAge: 0
    })
  )

/**
 * A same-site path to return to after signing in, or "/". No control character passes: a browser
 * drops tabs and newlines from a Location, so "/\t/evil.example" would lead off-site.
 */
export const safeReturnTo = (value: string | undefined) =>
  value !== undefined && /^\/(?![/\\])/.test(value) && !/[\u0000-\u001f\u007f]/.test(value) ? value : "/"
