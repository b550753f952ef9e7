// A client that hammers a port from before the server starts: it tries to connect until the
// port accepts, then keeps sending a mix of requests until /ready answers 200. Every request
// the port accepted must be answered within a deadline; one that is not is recorded as hung.
import { request as httpRequest } from "node:http"

export interface ProbeAnswer {
  readonly method: string
  readonly path: string
  readonly status: number
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
  readonly body: string
}

export interface ProbeReport {
  readonly answers: ReadonlyArray<ProbeAnswer>
  /** Requests accepted but never answered in time, or cut off without an answer. */
  readonly failures: ReadonlyArray<string>
}

const form = { "content-type": "application/x-www-form-urlencoded" }
const webSocket = {
  connection: "Upgrade",
  upgrade: "websocket",
  "sec-websocket-version": "13",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="
}

const mix: ReadonlyArray<{
  readonly method: string
  readonly path: string
  readonly headers?: Record<string, string>
  readonly body?: string
}> = [
  { method: "GET", path: "/ready" },
  { method: "GET", path: "/health" },
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/api/v1/profile" },
  { method: "POST", path: "/oauth/token", headers: form, body: "grant_type=refresh_token&refresh_token=x" },
  { method: "GET", path: "/setup" },
  { method: "GET", path: "/agent_api/v1/cable", headers: webSocket }
]

type Outcome =
  | { readonly _tag: "refused" }
  | { readonly _tag: "answered"; readonly answer: ProbeAnswer }
  | { readonly _tag: "failed" }

/**
 * Starts probing `port` now; resolves once /ready has answered 200 and every request sent has
 * settled. `answerMs` bounds each request; `totalMs` bounds the whole start.
 */
export const probeStartup = (port: number, options: { readonly answerMs: number; readonly totalMs: number }) => {
  const answers: Array<ProbeAnswer> = []
  const failures: Array<string> = []
  const send = ({ method, path, headers, body }: (typeof mix)[number]) =>
    new Promise<Outcome>((done) => {
      let settled = false
      const settle = (outcome: Outcome) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        done(outcome)
      }
      const request = httpRequest({
        host: "127.0.0.1",
        port,
        method,
        path,
        agent: false,
        headers
      })
      let accepted = false
      request.on("socket", (socket) => socket.once("connect", () => (accepted = true)))
      const timer = setTimeout(() => {
        failures.push(`${method} ${path}: accepted but not answered within ${options.answerMs} ms`)
        request.destroy()
        settle({ _tag: "failed" })
      }, options.answerMs)
      request.on("response", (response) => {
        let text = ""
        response.on("data", (chunk: Buffer) => (text += chunk.toString()))
        response.on("end", () => {
          const answer = { method, path, status: response.statusCode ?? 0, headers: response.headers, body: text }
          answers.push(answer)
          settle({ _tag: "answered", answer })
        })
      })
      // A cable upgrade that succeeds is an answer too (101); the socket is not needed.
      request.on("upgrade", (response, socket) => {
        socket.destroy()
        const answer = { method, path, status: response.statusCode ?? 101, headers: response.headers, body: "" }
        answers.push(answer)
        settle({ _tag: "answered", answer })
      })
      request.on("error", (error: NodeJS.ErrnoException) => {
        if (!accepted && error.code === "ECONNREFUSED") return settle({ _tag: "refused" })
        failures.push(`${method} ${path}: ${error.code ?? error.message} without an answer`)
        settle({ _tag: "failed" })
      })
      request.end(body)
    })

  const run = async (): Promise<ProbeReport> => {
    const deadline = Date.now() + options.totalMs
    const pending: Array<Promise<Outcome>> = []
    let ready = false
    let turn = 0
    // Until the port accepts: one connection attempt at a time, back to back.
    for (;;) {
      if (Date.now() > deadline) throw new Error(`port ${port} never accepted within ${options.totalMs} ms`)
      const outcome = await send(mix[0]!)
      if (outcome._tag !== "refused") break
      await new Promise((done) => setTimeout(done, 5))
    }
    // From the first accepted connection: a request of the mix every few ms, none awaited
    // before the next is sent, until /ready answers 200.
    while (!ready && failures.length === 0) {
      if (Date.now() > deadline) throw new Error(`/ready never answered 200 within ${options.totalMs} ms`)
      const sent = send(mix[turn++ % mix.length]!)
      pending.push(sent)
      void sent.then((outcome) => {
        if (outcome._tag === "answered" && outcome.answer.path === "/ready" && outcome.answer.status === 200)
          ready = true
      })
      await new Promise((done) => setTimeout(done, 10))
    }
    await Promise.all(pending)
    return { answers, failures }
  }
  return run()
}
