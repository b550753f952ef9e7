// A real HTTP server speaking OpenAI's wire format, scripted per test: each path answers with the
// handler a test gives it (SSE chat chunks, JSON, raw bytes, a status, a cut or a hang). It records
// every request (headers and parsed body) and tells when the connection of a request closes.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"

export interface FakeRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  /** The body parsed as JSON when it is JSON, else its text. */
  readonly body: any
  /** Resolves when this request's connection closes. */
  readonly closed: Promise<void>
}

/** Answers one request; whatever it returns is awaited. */
export type FakeHandler = (request: FakeRequest, response: ServerResponse) => unknown

export interface FakeOpenAi {
  /** The `/v1` base URL to give the provider. */
  readonly baseUrl: string
  readonly requests: Array<FakeRequest>
  /** Answer `path` (under /v1) with `handler` from now on. */
  readonly on: (path: string, handler: FakeHandler) => void
  /** Resolves with the next request to reach `path`. */
  readonly next: (path: string) => Promise<FakeRequest>
  readonly close: () => Promise<void>
}

export const startFakeOpenAi = async (): Promise<FakeOpenAi> => {
  const handlers = new Map<string, FakeHandler>()
  const waiters = new Map<string, Array<(request: FakeRequest) => void>>()
  const requests: Array<FakeRequest> = []
  const server = createServer(async (incoming, response) => {
    const chunks: Array<Buffer> = []
    for await (const chunk of incoming) chunks.push(chunk as Buffer)
    const text = Buffer.concat(chunks).toString("utf8")
    const body: unknown = incoming.headers["content-type"]?.includes("application/json") ? JSON.parse(text) : text
    const path = (incoming.url ?? "/").replace(/^\/v1/, "")
    const request: FakeRequest = {
      method: incoming.method ?? "GET",
      path,
      headers: incoming.headers,
      body,
      closed: new Promise((resolve) => {
        if (incoming.socket.destroyed) resolve()
        else incoming.socket.once("close", () => resolve())
      })
    }
    requests.push(request)
    for (const resolve of waiters.get(path)?.splice(0) ?? []) resolve(request)
    const handler = handlers.get(path)
    if (handler === undefined)
      return json(response, 404, { error: { message: `no route ${path}`, type: "invalid_request_error" } })
    await handler(request, response)
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    on: (path, handler) => {
      handlers.set(path, handler)
    },
    next: (path) =>
      new Promise((resolve) => {
        waiters.set(path, [...(waiters.get(path) ?? []), resolve])
      }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

export const json = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { "content-type": "application/json", ...headers })
  response.end(JSON.stringify(body))
}

/** Opens an SSE answer: headers sent at once. */
export const openSse = (response: ServerResponse) => {
  response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" })
  response.flushHeaders()
}

/** One SSE event carrying `data` (serialised as JSON unless it is already text). */
export const sendEvent = (response: ServerResponse, data: unknown) => {
  response.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`)
}

/** A whole streamed answer: the chunks, then `[DONE]`. */
export const sse =
  (...chunks: ReadonlyArray<unknown>): FakeHandler =>
  (_request, response) => {
    openSse(response)
    for (const chunk of chunks) sendEvent(response, chunk)
    sendEvent(response, "[DONE]")
    response.end()
  }

/** A chat completion chunk with one choice. */
export const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 1,
  model: "fake",
  choices: [{ index: 0, delta, finish_reason: finishReason }]
})

/** The closing chunk of `stream_options.include_usage`: no choices, the usage. */
export const usageChunk = (usage: Record<string, unknown>) => ({
  id: "chatcmpl-fake",
  object: "chat.completion.chunk",
  created: 1,
  model: "fake",
  choices: [],
  usage
})

/** An error answer in OpenAI's envelope. */
export const status =
  (code: number, headers: Record<string, string> = {}, body: unknown = { error: { message: `status ${code}` } }) =>
  (_request: FakeRequest, response: ServerResponse) => {
    if (typeof body !== "string") return json(response, code, body, headers)
    response.writeHead(code, { "content-type": "text/html", ...headers })
    response.end(body)
  }
