// Every line logged while a request is handled carries the request's id (annotation request_id):
// the handler's own lines and the request line, with the id the client sent or the one Troupe made
// and answered in X-Request-Id.
import { Effect, Logger, References } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { afterAll, beforeAll, expect, it } from "vitest"
import { startTestServer, type TestServer } from "../support/server.ts"

interface Line {
  readonly message: string
  readonly annotations: Record<string, unknown>
}
const lines: Array<Line> = []
const recordingLogger = Logger.make(({ message, fiber }) => {
  lines.push({
    message: [message].flat().map(String).join(" "),
    annotations: { ...fiber.getRef(References.CurrentLogAnnotations) }
  })
})

const LoggingRoute = HttpRouter.add(
  "GET",
  "/test/logs",
  Effect.as(Effect.logWarning("inside the handler"), HttpServerResponse.text("logged"))
)

let server: TestServer
beforeAll(async () => {
  server = await startTestServer({ extraRoutes: LoggingRoute, logger: { logger: recordingLogger, level: "Info" } })
})
afterAll(() => server?.close())

/** The lines logged for one request (its handler's line and its request line), by the id it answered. */
const linesOf = async (headers: Record<string, string>) => {
  const response = await fetch(`${server.baseUrl}/test/logs`, { headers })
  expect(response.status).toBe(200)
  const id = response.headers.get("x-request-id")!
  const mine = lines.filter((line) => line.annotations.request_id === id)
  return { id, messages: mine.map((line) => line.message) }
}

it("annotates the handler's lines and the request line with the id the client sent", async () => {
  const { id, messages } = await linesOf({ "x-request-id": "trace-me-0001" })
  expect(id).toBe("trace-me-0001")
  expect(messages).toEqual(["inside the handler", expect.stringMatching(/^GET \/test\/logs 200 \d+ms$/)])
})

it("annotates them with the id Troupe made when the client sent none", async () => {
  const { id, messages } = await linesOf({})
  expect(id).toMatch(/^[0-9a-f-]{36}$/)
  expect(messages).toHaveLength(2)
})
