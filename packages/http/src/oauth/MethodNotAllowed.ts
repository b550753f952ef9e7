// The POST-only OAuth endpoints answer any other method 405 with `Allow: POST`, in the OAuth
// error envelope (the spec names no answer; RFC 9110 §15.5.6). HEAD is routed as GET.
import { Effect } from "effect"
import { HttpRouter } from "effect/http"
import { oauthError } from "./Responses.ts"

const postOnly: ReadonlyArray<`/${string}`> = [
  "/oauth/token",
  "/oauth/revoke",
  "/oauth/device_authorization",
  "/oauth/device_authorization/cancellation"
]
const otherMethods = ["GET", "PUT", "PATCH", "DELETE", "OPTIONS"] as const

const notAllowed = Effect.succeed(oauthError("invalid_request", "Use POST", 405, { allow: "POST" }))

export const MethodNotAllowedRoutes = HttpRouter.addAll(
  postOnly.flatMap((path) => otherMethods.map((method) => HttpRouter.route(method, path, notAllowed)))
)
