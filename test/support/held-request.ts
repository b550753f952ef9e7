// A request the test keeps in flight for as long as it likes: sent with `Expect: 100-continue` and
// no body, it is in the server's hands (its handler is reading the body) once the server answers
// 100 Continue, and it stays unanswered until the test sends the body.
import { connect } from "node:net"
import { parseAnswers, type RawAnswer } from "./raw-http.ts"

export interface HeldRequest {
  /** What the server has sent after its 100 Continue (nothing while the request is held). */
  readonly answeredSoFar: () => string
  /** Sends the body; resolves with the answer once the server has closed the connection. */
  readonly release: () => Promise<RawAnswer>
}

const interim = "HTTP/1.1 100 Continue\r\n\r\n"

/** Sends `method path` with a JSON body held back; resolves once the server asked for the body. */
export const holdRequest = (baseUrl: string, method: string, path: string, body: unknown) =>
  new Promise<HeldRequest>((resolve, reject) => {
    const url = new URL(baseUrl)
    const payload = Buffer.from(JSON.stringify(body))
    const socket = connect(Number(url.port), url.hostname)
    let received = Buffer.alloc(0)
    let continued = false
    const closed = new Promise<void>((done) => socket.once("close", () => done()))
    const afterInterim = () => received.subarray(interim.length)
    socket.on("error", () => socket.destroy())
    void closed.then(() => {
      if (!continued) reject(new Error(`the server closed the held request: ${received.toString("latin1")}`))
    })
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (continued || received.length < interim.length) return
      continued = true
      if (received.subarray(0, interim.length).toString("latin1") !== interim) {
        reject(new Error(`expected 100 Continue, got ${received.toString("latin1")}`))
        return
      }
      resolve({
        answeredSoFar: () => afterInterim().toString("latin1"),
        release: async () => {
          socket.write(payload)
          await closed
          const [answer] = parseAnswers(afterInterim())
          if (answer === undefined) throw new Error("the server closed the held request without an answer")
          return answer
        }
      })
    })
    socket.write(
      `${method} ${path} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\ncontent-type: application/json\r\n` +
        `content-length: ${payload.length}\r\nexpect: 100-continue\r\n\r\n`
    )
  })
