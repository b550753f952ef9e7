// The global middleware every request passes, in this order: request id (echoed when the client
// sent a sane one), the error envelope of the request's door for every failure, the canonical
// target (refused when it is not valid percent-encoded UTF-8) and the strict request every route
// reads, Cache-Control: no-store on API answers (they may carry credentials), and one log line
// with method, path (never the query string), status and duration (at Debug for the /health and
// /ready probes, which would otherwise fill the log). Every line logged while a request is handled
// carries its id (annotation request_id). Headers and bodies are never logged.
import { randomUUID } from "node:crypto"
import { Clock, Effect, type Types } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelopeFailures } from "./ErrorEnvelope.ts"
import { doorOf } from "./Refusal.ts"
import { canonicalTarget } from "./RequestTarget.ts"
import { strictRequest } from "./StrictRequest.ts"

const apiPrefixes = ["/api/", "/agent_api/", "/oauth/"]
const requestIdPattern = /^[A-Za-z0-9._-]{1,128}$/
const probes = new Set(["/health", "/ready"])

export const RequestConventions = HttpRouter.middleware(
  (
    httpEffect
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled, HttpServerRequest.HttpServerRequest> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const started = yield* Clock.currentTimeMillis
      const sent = request.headers["x-request-id"]
      const requestId = sent !== undefined && requestIdPattern.test(sent) ? sent : randomUUID()
      const path = request.url.split("?")[0]!
      const target = canonicalTarget(request.url)
      const response = yield* envelopeFailures(
        typeof target === "string"
          ? Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, strictRequest(request, target))
          : Effect.fail(target),
        doorOf(request.method, path)
      ).pipe(Effect.annotateLogs("request_id", requestId))
      const api = apiPrefixes.some((prefix) => path.startsWith(prefix))
      const elapsed = (yield* Clock.currentTimeMillis) - started
      const line = `${request.method} ${path} ${response.status} ${elapsed}ms`
      const log = probes.has(path) ? Effect.logDebug(line) : Effect.logInfo(line)
      yield* Effect.annotateLogs(log, "request_id", requestId)
      return HttpServerResponse.setHeaders(response, {
        "x-request-id": requestId,
        ...(api && response.headers["cache-control"] === undefined ? { "cache-control": "no-store" } : {})
      })
    }),
  { global: true }
)
