// Requests Node's HTTP parser refuses before any route runs (a header block over 16 KB, raw
// non-ASCII bytes in the target, an unknown method, bytes past a body's Content-Length, a broken
// chunk): answered in the envelope of the door the request line names (Refusal.ts), with
// `Connection: close`, instead of Node's empty-bodied default. Codes the spec does not name are
// the status's reason phrase (431 request_header_fields_too_large, 408 request_timeout). A
// connection the client closes in the middle of a request's body is dropped at once, which aborts
// that request (Node leaves it waiting for the rest when a clientError handler is installed).
import { randomUUID } from "node:crypto"
import { type Server, type ServerResponse, STATUS_CODES } from "node:http"
import type { Duplex } from "node:stream"
import { doorOf, type Refusal, shape } from "./Refusal.ts"

interface ParserError extends Error {
  readonly code?: string
  readonly rawPacket?: Buffer
}

const refusalOf = (code: string | undefined): Refusal => {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return {
        status: 431,
        code: "request_header_fields_too_large",
        message: "The request's header block is over 16 KB"
      }
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: 413, code: "content_too_large", message: "The request's chunk extensions are too large" }
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, code: "request_timeout", message: "The request did not arrive in time" }
    default:
      return { status: 400, code: "bad_request", message: "The request is not a well-formed HTTP/1.1 message" }
  }
}

/** The door of the request line at the start of the refused bytes, when there is one. */
const doorOfPacket = (packet: Buffer | undefined) => {
  const line = /^([A-Z]+) (\/[^\s?]*)\S* HTTP\/1\.[01]\r?\n/.exec(packet?.toString("latin1", 0, 8192) ?? "")
  return line === null ? "api" : doorOf(line[1]!, line[2]!)
}

const answer = (error: ParserError) => {
  const shaped = shape(doorOfPacket(error.rawPacket), refusalOf(error.code))
  const body = JSON.stringify(shaped.body)
  const headers: Record<string, string> = {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(body)),
    "cache-control": "no-store",
    ...shaped.headers,
    "x-request-id": randomUUID(),
    connection: "close"
  }
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
  return `HTTP/1.1 ${shaped.status} ${STATUS_CODES[shaped.status]}\r\n${head.join("")}\r\n${body}`
}

/**
 * Gives `server` a clientError handler that answers the envelope. A response still in flight on
 * the connection (the request before the unreadable bytes) is finished first, so answers keep
 * their order; then the refusal is written and the connection closed.
 */
export const answerClientErrors = <S extends Server>(server: S): S =>
  server.on("clientError", (error: ParserError, socket: Duplex) => {
    if (error.code === "ECONNRESET" || !socket.writable) {
      socket.destroy()
      return
    }
    const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage
    // The client closed its side mid-message: the in-flight request's body will never come (an
    // upload cut short), so the connection goes now, aborting that request, and none waits on it.
    if (error.code === "HPE_INVALID_EOF_STATE" && inFlight && !inFlight.req.complete) {
      socket.destroy()
      return
    }
    if (inFlight && !inFlight.writableFinished) inFlight.once("finish", () => socket.end(answer(error)))
    else socket.end(answer(error))
  })
