// HTTP/1.1 over a bare socket, for requests fetch refuses to send (raw bytes in the target, a
// forbidden header, an unknown method, a body longer than its Content-Length). Every request
// uses its own connection with `Connection: close`; every answer on it is read and parsed.
import { connect } from "node:net"

export interface RawRequest {
  readonly method: string
  /** The request target as sent, written as latin1: each char is one byte. */
  readonly target: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | Buffer
  /** Bytes sent after the body, past its Content-Length. */
  readonly trailing?: Buffer
  /** Close after the first answer (an upgrade the server may keep open). */
  readonly oneAnswer?: boolean
}

export interface RawAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

const crlf = Buffer.from("\r\n")

const headOf = (request: RawRequest, host: string, body: Buffer) => {
  const headers: Record<string, string> = { host, connection: "close", ...request.headers }
  if (body.length > 0 || !["GET", "HEAD"].includes(request.method)) headers["content-length"] ??= String(body.length)
  const fields = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`)
  return Buffer.from(`${request.method} ${request.target} HTTP/1.1\r\n${fields.join("")}\r\n`, "latin1")
}

/** Parses the answers in `bytes`, one after another (Content-Length or chunked bodies). */
export const parseAnswers = (bytes: Buffer): Array<RawAnswer> => {
  const answers: Array<RawAnswer> = []
  let at = 0
  while (at < bytes.length) {
    const end = bytes.indexOf("\r\n\r\n", at)
    if (end === -1) break
    const [statusLine, ...fieldLines] = bytes.subarray(at, end).toString("latin1").split("\r\n")
    const headers: Record<string, string> = {}
    for (const line of fieldLines) {
      const colon = line.indexOf(":")
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    let bodyStart = end + 4
    let body: Buffer
    if (headers["transfer-encoding"]?.toLowerCase() === "chunked") {
      const chunks: Array<Buffer> = []
      for (;;) {
        const lineEnd = bytes.indexOf(crlf, bodyStart)
        if (lineEnd === -1) break
        const size = Number.parseInt(bytes.subarray(bodyStart, lineEnd).toString("latin1"), 16)
        bodyStart = lineEnd + 2
        if (!(size > 0)) {
          bodyStart += 2
          break
        }
        chunks.push(bytes.subarray(bodyStart, bodyStart + size))
        bodyStart += size + 2
      }
      body = Buffer.concat(chunks)
      at = bodyStart
    } else {
      const length =
        headers["content-length"] === undefined ? bytes.length - bodyStart : Number(headers["content-length"])
      body = bytes.subarray(bodyStart, bodyStart + length)
      at = bodyStart + length
    }
    answers.push({ status: Number(statusLine?.split(" ")[1]), headers, body: body.toString("utf8") })
  }
  return answers
}

const firstAnswerComplete = (bytes: Buffer) => {
  const end = bytes.indexOf("\r\n\r\n")
  if (end === -1) return false
  const head = bytes.subarray(0, end).toString("latin1")
  if (/^HTTP\/1\.1 101/.test(head)) return true
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)
  if (length) return bytes.length >= end + 4 + Number(length[1])
  return /\r\ntransfer-encoding:\s*chunked/i.test(head) && bytes.includes("\r\n0\r\n\r\n", end)
}

/** Sends one request on a fresh connection; answers every response read until the server closes it. */
export const sendRaw = (baseUrl: string, request: RawRequest, timeoutMs = 20_000) =>
  new Promise<Array<RawAnswer>>((resolve, reject) => {
    const url = new URL(baseUrl)
    const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body)
    const socket = connect(Number(url.port), url.hostname)
    const received: Array<Buffer> = []
    const finish = () => {
      clearTimeout(timer)
      const answers = parseAnswers(Buffer.concat(received))
      if (answers.length === 0) reject(new Error("the server closed the connection without an answer"))
      else resolve(answers)
    }
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no answer within ${timeoutMs} ms`))
    }, timeoutMs)
    socket.on("data", (chunk) => {
      received.push(chunk)
      if (request.oneAnswer && firstAnswerComplete(Buffer.concat(received))) socket.destroy()
    })
    // The server may answer early (413) and close while the body is still being written.
    socket.on("error", () => socket.destroy())
    socket.on("close", finish)
    socket.write(headOf(request, url.host, body))
    socket.write(body)
    if (request.trailing) socket.write(request.trailing)
  })
