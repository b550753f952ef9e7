// The global middleware every request passes, in this order: request id (echoed when the client
// sent a sane one), the error envelope of the request's door for every failure, the canonical
// target (refused when it is not valid percent-encoded UTF-8) and the strict request every route
// reads, Cache-Control: no-store on API answers (they may carry credentials), and one log line
// with method, path (never the query string), status and duration (at Debug for the /health and
// /ready probes, which would otherwise fill the log). Every line logged while a request is handled
// carries its id (annotation request_id). Headers and bodies are never logged.
import { randomUUID } from "node:crypto"
import { Clock, Context, Effect, type Types } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { answerFailure, normalize } from "./ErrorEnvelope.ts"
import { doorOf, RequestRefused } from "./Refusal.ts"
import { canonicalTarget } from "./RequestTarget.ts"
import { strictRequest } from "./StrictRequest.ts"

const apiPrefixes = ["/api/", "/agent_api/", "/oauth/"]
const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/
const probes = new Set(["/health", "/ready"])

const pathOf = (url: string) => {
  const query = url.indexOf("?")
  return query < 0 ? url : url.slice(0, query)
}

/** The answer with its request id, and Cache-Control: no-store on an API answer that sets none. */
const withConventionHeaders = (
  response: HttpServerResponse.HttpServerResponse,
  requestId: string,
  api: boolean
): HttpServerResponse.HttpServerResponse =>
  api && response.headers["cache-control"] === undefined
    ? HttpServerResponse.setHeaders(response, { "x-request-id": requestId, "cache-control": "no-store" })
    : HttpServerResponse.setHeader(response, "x-request-id", requestId)

// Written without Effect.gen, with one match for the answer and one log annotation around the
// whole request: this runs for every request, and each step costs a few microseconds.
export const RequestConventions = HttpRouter.middleware(
  (
    httpEffect
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.withFiber((fiber) => {
      const request = Context.getUnsafe(fiber.context, HttpServerRequest.HttpServerRequest)
      const clock = fiber.getRef(Clock.Clock)
      const started = clock.currentTimeMillisUnsafe()
      const sent = request.headers["x-request-id"]
      const requestId = sent !== undefined && requestIdPattern.test(sent) ? sent : randomUUID()
      const path = pathOf(request.url)
      const door = doorOf(request.method, path)
      const target = canonicalTarget(request.url)
      const strict = typeof target === "string" ? strictRequest(request, target) : target
      const handled: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown> =
        strict instanceof RequestRefused
          ? Effect.fail(strict)
          : strict === request
            ? httpEffect
            : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, strict)
      const answer = (response: HttpServerResponse.HttpServerResponse) => {
        const line = `${request.method} ${path} ${response.status} ${clock.currentTimeMillisUnsafe() - started}ms`
        const api = apiPrefixes.some((prefix) => path.startsWith(prefix))
        return Effect.as(
          probes.has(path) ? Effect.logDebug(line) : Effect.logInfo(line),
          withConventionHeaders(response, requestId, api)
        )
      }
      return Effect.annotateLogs(
        Effect.matchCauseEffect(handled, {
          onSuccess: (response) => answer(normalize(door, response)),
          onFailure: (cause) => Effect.flatMap(answerFailure(door, cause), answer)
        }),
        "request_id",
        requestId
      )
    }),
  { global: true }
)
