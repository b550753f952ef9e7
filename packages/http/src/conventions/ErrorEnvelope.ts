// The one mapper of failures: every failure of every route answers its door's shape (Refusal.ts):
// {error: {code, message}}, or {error, error_description} on /oauth/*. Unknown routes, decode
// failures, refused targets and bodies, unsupported media types, oversized bodies and defects are
// all mapped here; a defect's details go to the log, never to the client.
import { ActorUnreachable } from "@troupe/actors/Errors"
import { Cause, Effect } from "effect"
import { HttpServerError, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { type Door, notReadyCode, type Refusal, RequestRefused, retryAfterSeconds, shape } from "./Refusal.ts"
import { describeDecodeFailure } from "./SchemaIssues.ts"

export const envelope = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers })

const internalError: Refusal = { status: 500, code: "internal_error", message: "Something went wrong on our side" }
const tooLarge: Refusal = {
  status: 413,
  code: "content_too_large",
  message: "The request body is too large",
  headers: { connection: "close" }
}
/** An actor no node could step while its shard moved: the client may retry in a moment. */
const unreachable: Refusal = {
  status: 503,
  code: notReadyCode,
  message: "The work is moving between nodes; retry shortly",
  headers: { "retry-after": String(retryAfterSeconds) }
}
const unreadable: Refusal = { status: 400, code: "parameter_invalid", message: "The request body could not be read" }

const fromCause = (cause: Cause.Cause<unknown>): HttpServerResponse.HttpServerResponse | Refusal => {
  for (const reason of cause.reasons) {
    const value = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    if (value === undefined) continue
    if (HttpServerResponse.isHttpServerResponse(value)) return value
    if (value instanceof RequestRefused) return value
    if (value instanceof ActorUnreachable) return unreachable
    if (HttpApiError.HttpApiSchemaError.is(value)) {
      if (value.kind === "Body" || value.kind === "ResponseHeaders") return internalError
      const failure = describeDecodeFailure(value)
      return { status: failure.status, code: failure.code, message: failure.message }
    }
    if (HttpApiError.HttpApiPayloadTooLarge.is(value)) return tooLarge
    if (HttpServerError.isHttpServerError(value)) {
      switch (value.reason._tag) {
        case "RouteNotFound":
          return { status: 404, code: "not_found", message: "Not found" }
        case "RequestParseError":
          if (value.reason.cause instanceof RequestRefused) return value.reason.cause
          return value.reason.reason === "BodyTooLarge" ? tooLarge : unreadable
        default:
          return internalError
      }
    }
  }
  return internalError
}

const respond = (door: Door, refusal: Refusal) => {
  const shaped = shape(door, refusal)
  return HttpServerResponse.jsonUnsafe(shaped.body, { status: shaped.status, headers: shaped.headers })
}

const statusCodes: Record<number, string> = {
  400: "parameter_invalid",
  401: "unauthorized",
  403: "not_authorized",
  404: "not_found",
  413: "content_too_large",
  500: "internal_error"
}

/** Built-in responses that bypass the error channel: the 415 text and empty error bodies. */
export const normalize = (door: Door, response: HttpServerResponse.HttpServerResponse) => {
  if (response.status === 415) {
    return respond(door, {
      status: 415,
      code: "unsupported_media_type",
      message: "Send the request body as application/json"
    })
  }
  const code = statusCodes[response.status]
  if (code !== undefined && response.body._tag === "Empty") {
    return respond(door, { status: response.status, code, message: code.replace(/_/g, " "), headers: response.headers })
  }
  return response
}

/**
 * `door`'s answer to a failure: its shape for every failure (defects are logged, not shown);
 * a cause of interruptions only stays a failure.
 */
export const answerFailure = (
  door: Door,
  cause: Cause.Cause<unknown>
): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
  if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
  const found = fromCause(cause)
  const response = HttpServerResponse.isHttpServerResponse(found) ? normalize(door, found) : respond(door, found)
  return response.status >= 500
    ? Effect.as(Effect.logError("request failed", cause), response)
    : Effect.succeed(response)
}
