// The Node HTTP server Troupe listens with. It answers every request that arrives while the
// application's handler is not attached (start-up: migrations, runtime, domain; shut-down), so
// no accepted request is ever left unanswered: /health 200, anything else 503 with Retry-After.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import { doorOf, shape } from "@troupe/http/conventions/Refusal"
import { healthBody, notReadyCode, retryAfterSeconds } from "@troupe/http/Health"

const answer = (request: IncomingMessage, response: ServerResponse, starting: boolean) => {
  const method = request.method ?? "GET"
  const path = (request.url ?? "/").split("?")[0]!
  const noStore = { "cache-control": "no-store" }
  const { status, body, headers } =
    path === "/health" && (method === "GET" || method === "HEAD")
      ? { status: 200, body: healthBody, headers: noStore }
      : shape(doorOf(method, path), {
          status: 503,
          code: notReadyCode,
          message: starting ? "Troupe is starting; retry shortly" : "Troupe is stopping",
          headers: { ...noStore, "retry-after": String(retryAfterSeconds) }
        })
  response.writeHead(status, { ...headers, "content-type": "application/json" })
  response.end(method === "HEAD" ? undefined : JSON.stringify(body))
}

/**
 * A Node server whose first `request` listener answers only when it is the only one: the
 * application's listener is added once everything is ready and removed at shut-down.
 */
export const createListener = (): Server => {
  const server = createServer()
  let stopping = false
  server.on("removeListener", (event) => {
    if (event === "request") stopping = true
  })
  server.on("request", (request, response) => {
    if (server.listenerCount("request") === 1) answer(request, response, !stopping)
  })
  return server
}
