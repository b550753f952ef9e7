// Platform: session. POST/GET/DELETE /api/v1/session (spec "Platform: session"). A session is
// encoded from its row.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, NotFound, RateLimitedResponse, Unauthorized } from "../Errors.ts"
import { PlatformAuthentication } from "./Caller.ts"

export const Session = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literals(["api", "browser"]),
  expires_at: Schema.DateFromString
})

export const SessionLogin = Schema.Struct({
  email: Schema.String,
  password: Schema.String
})

export const SessionCreated = Schema.Struct({
  session: Session,
  token: Schema.String,
  token_type: Schema.Literal("Bearer")
}).pipe(HttpApiSchema.status(201))

/**
 * The sign-in door: counts the attempt against the source IP's budget before anything else,
 * refuses credentials in the query string, and answers every malformed credential value with
 * the same 401 invalid_credentials (a body that is not JSON is 400 bad_request).
 */
export class SessionDoor extends HttpApiMiddleware.Service<SessionDoor>()("@troupe/contracts/platform/SessionDoor", {
  error: [BadRequest, Unauthorized, RateLimitedResponse]
}) {}

export class SessionGroup extends HttpApiGroup.make("session")
  .add(
    HttpApiEndpoint.post("create", "/api/v1/session", {
      payload: SessionLogin,
      success: SessionCreated,
      error: [BadRequest, Unauthorized, RateLimitedResponse]
    })
      .middleware(SessionDoor)
      .annotate(OpenApi.Description, "Sign in with email and password; the bearer token is shown once."),
    HttpApiEndpoint.get("show", "/api/v1/session", {
      success: Schema.Struct({ session: Session }),
      error: [Unauthorized, NotFound]
    })
      .middleware(PlatformAuthentication)
      .annotate(OpenApi.Description, "The session that authenticated this request (bearer or browser cookie)."),
    HttpApiEndpoint.delete("revoke", "/api/v1/session", {
      success: Schema.Struct({ revoked: Schema.Literal(true) }),
      error: [Unauthorized, NotFound]
    })
      .middleware(PlatformAuthentication)
      .annotate(OpenApi.Description, "Revoke the presented API session bearer; it stops working at once.")
  )
  .annotateMerge(OpenApi.annotations({ title: "Platform: session" })) {}
