// The one mapper of failures: every failure of every route answers {error: {code, message}}.
// Unknown routes, decode failures, unsupported media types, oversized bodies and defects are
// all mapped here; a defect's details go to the log, never to the client.
import { Cause, Effect } from "effect"
import { HttpServerError, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { describeDecodeFailure } from "./SchemaIssues.ts"

export const envelope = (status: number, code: string, message: string, headers?: Record<string, string>) =>
  HttpServerResponse.jsonUnsafe({ error: { code, message } }, { status, headers })

const internalError = () => envelope(500, "internal_error", "Something went wrong on our side")
const tooLarge = () => envelope(413, "content_too_large", "The request body is too large", { connection: "close" })

const fromCause = (cause: Cause.Cause<unknown>): HttpServerResponse.HttpServerResponse => {
  for (const reason of cause.reasons) {
    const value = Cause.isFailReason(reason) ? reason.error : Cause.isDieReason(reason) ? reason.defect : undefined
    if (value === undefined) continue
    if (HttpServerResponse.isHttpServerResponse(value)) return value
    if (HttpApiError.HttpApiSchemaError.is(value)) {
      if (value.kind === "Body" || value.kind === "ResponseHeaders") return internalError()
      const failure = describeDecodeFailure(value)
      return envelope(400, failure.code, failure.message)
    }
    if (HttpApiError.HttpApiPayloadTooLarge.is(value)) return tooLarge()
    if (HttpServerError.isHttpServerError(value)) {
      switch (value.reason._tag) {
        case "RouteNotFound":
          return envelope(404, "not_found", "Not found")
        case "RequestParseError":
          return value.reason.reason === "BodyTooLarge"
            ? tooLarge()
            : envelope(400, "parameter_invalid", "The request body could not be read")
        default:
          return internalError()
      }
    }
  }
  return internalError()
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
const normalize = (response: HttpServerResponse.HttpServerResponse) => {
  if (response.status === 415) {
    return envelope(415, "unsupported_media_type", "Send the request body as application/json")
  }
  const code = statusCodes[response.status]
  if (code !== undefined && response.body._tag === "Empty") {
    return envelope(response.status, code, code.replace(/_/g, " "), response.headers)
  }
  return response
}

/** Turns every failure of `httpEffect` into the envelope (defects are logged, not shown). */
export const envelopeFailures = <R>(
  httpEffect: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  httpEffect.pipe(
    Effect.catchCause((cause) => {
      if (Cause.hasInterruptsOnly(cause)) return Effect.failCause(cause as Cause.Cause<never>)
      const response = fromCause(cause)
      return response.status >= 500
        ? Effect.as(Effect.logError("request failed", cause), response)
        : Effect.succeed(response)
    }),
    Effect.map(normalize)
  )
