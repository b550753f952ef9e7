// End to end: `troupe serve` with OTEL_EXPORTER_OTLP_ENDPOINT exports its spans and logs over
// OTLP/HTTP to a collector (here a node:http server in the test): each request is a server span,
// each step a span named for its kind and event with the actor's address, the event, the outcome
// and the seq, in the trace of the request that caused it; the request's log line carries its id
// and its trace. What is buffered when the server stops is exported before it exits; no credential
// and no query value is.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { eventually, freePort } from "../support/processes.ts"
import { startTestServer } from "../support/server.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

interface Export {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
}
interface AnyValue {
  readonly stringValue?: string
  readonly intValue?: string
  readonly boolValue?: boolean
}
interface KeyValue {
  readonly key: string
  readonly value: AnyValue
}
interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<KeyValue>
}

const exports: Array<Export> = []
let collector: Server
let database: TestDatabase

beforeAll(async () => {
  collector = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      exports.push({ path: req.url!, headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString()) })
      res.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((done) => collector.listen(0, "127.0.0.1", done))
  database = await freshDatabase()
  const preparing = await startTestServer({ database: { ...database, drop: async () => {} } })
  await createOwner(preparing)
  await preparing.close()
})
afterAll(async () => {
  await killAll()
  await new Promise((done) => collector?.close(done))
  await database?.drop()
})

/** Attributes as a plain record: strings, integers as numbers, booleans. */
const attributesOf = (list: ReadonlyArray<KeyValue>) =>
  Object.fromEntries(
    list.map(({ key, value }) => [
      key,
      value.intValue !== undefined ? Number(value.intValue) : (value.stringValue ?? value.boolValue)
    ])
  )

it("exports the request span, the step span in its trace, and the request's log line", {
  timeout: 120_000
}, async () => {
  const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
  const server = await troupeServe(database.config, process.execPath, {
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
    OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20collector-secret",
    OTEL_SERVICE_NAME: "troupe-under-test"
  })
  const signIn = await request(server.baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })
  expect(signIn.status).toBe(201)
  const token = signIn.body.token as string
  const session = (await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })).body.session
  expect((await request(server.baseUrl, "GET", "/health?probe=s3cret-query")).status).toBe(200)
  const revoked = await request(server.baseUrl, "DELETE", "/api/v1/session", {
    headers: { ...bearer(token), "x-request-id": "revoke-0001" }
  })
  expect(revoked.status).toBe(200)
  await server.stop()
  expect(await server.exited).toEqual({ code: 0, signal: null })

  const traces = exports.filter((item) => item.path === "/v1/traces")
  expect(traces.length).toBeGreaterThan(0)
  for (const item of exports) {
    expect(item.headers["content-type"]).toBe("application/json")
    expect(item.headers.authorization).toBe("Bearer collector-secret")
  }
  const exported = JSON.stringify(exports.map((item) => item.body))
  expect(exported).not.toContain(token)
  expect(exported).not.toContain("s3cret-query")
  expect(exported).toContain("probe=REDACTED")
  const resources = traces.flatMap((item) => item.body.resourceSpans)
  expect(attributesOf(resources[0].resource.attributes)).toMatchObject({ "service.name": "troupe-under-test" })
  const spans: Array<Span> = resources.flatMap((resource) =>
    resource.scopeSpans.flatMap((scope: { spans: Array<Span> }) => scope.spans)
  )
  const byId = new Map(spans.map((span) => [span.spanId, span]))

  const requestSpan = spans.find(
    (span) => attributesOf(span.attributes)["http.response.header.x-request-id"] === "revoke-0001"
  )!
  expect(requestSpan).toBeDefined()
  expect(requestSpan.kind).toBe(2)
  expect(attributesOf(requestSpan.attributes)).toMatchObject({
    "http.request.method": "DELETE",
    "http.route": "/api/v1/session",
    "http.response.status_code": 200
  })

  const step = spans.find((span) => span.name === "apiSession session.revoke")!
  expect(step).toBeDefined()
  expect(attributesOf(step.attributes)).toEqual({
    "troupe.actor.kind": "apiSession",
    "troupe.actor.id": session.public_id,
    "troupe.event.type": "session.revoke",
    "troupe.step.cause": "send",
    "troupe.step.outcome": "accepted",
    "troupe.step.seq": 2
  })
  expect(step.traceId).toBe(requestSpan.traceId)
  const ancestors: Array<string> = []
  for (let span = byId.get(step.parentSpanId ?? ""); span; span = byId.get(span.parentSpanId ?? "")) {
    ancestors.push(span.spanId)
  }
  expect(ancestors).toContain(requestSpan.spanId)

  const created = spans.find((span) => span.name === "apiSession xstate.init")!
  expect(attributesOf(created.attributes)).toMatchObject({ "troupe.step.seq": 1, "troupe.step.cause": "create" })
  expect(spans.find((span) => span.spanId === created.parentSpanId)).toBeDefined()

  const records = exports
    .filter((item) => item.path === "/v1/logs")
    .flatMap((item) => item.body.resourceLogs)
    .flatMap((resource) => resource.scopeLogs)
    .flatMap((scope) => scope.logRecords)
  const line = records.find((record) => String(record.body.stringValue).startsWith("DELETE /api/v1/session 200"))
  expect(line).toBeDefined()
  expect(attributesOf(line.attributes)).toMatchObject({ request_id: "revoke-0001" })
  expect(line.traceId).toBe(requestSpan.traceId)
})

it("says once, with the reason, that a collector cannot be reached", {
  timeout: 120_000
}, async () => {
  const closedPort = await freePort()
  const server = await troupeServe(database.config, process.execPath, {
    OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${closedPort}/otel/`,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json"
  })
  expect((await request(server.baseUrl, "GET", "/health")).status).toBe(200)
  const warning = `OpenTelemetry export to http://127.0.0.1:${closedPort}/otel failed (ECONNREFUSED)`
  await eventually("the export warning", 60_000, () => server.output().includes(warning))
  expect((await request(server.baseUrl, "GET", "/health")).status).toBe(200)
  await server.stop()
  expect(server.output().split(warning).length - 1).toBe(1)
})
