// The HTTP scenario's load client when wrk is not installed, run as its own process (so it
// gets a core of its own, as wrk would): `connections` keep-alive sockets, each sending its
// next GET as soon as the previous answer is whole, for `millis`. Prints one JSON line: the
// requests answered, how many were not 200, the elapsed seconds and the p50/p99 latency in ms.
// Answers must carry Content-Length (both servers send it); anything else counts as an error.
import { connect, type Socket } from "node:net"
import { performance } from "node:perf_hooks"

export interface LoadRequest {
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly connections: number
  readonly millis: number
}

export interface LoadResult {
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly p50Ms: number
  readonly p99Ms: number
}

const { url, headers, connections, millis }: LoadRequest = JSON.parse(process.argv[2]!)
const target = new URL(url)
const request = Buffer.from(
  `GET ${target.pathname}${target.search} HTTP/1.1\r\nhost: ${target.host}\r\n` +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join("") +
    "\r\n"
)
const headEnd = Buffer.from("\r\n\r\n")
const latencies: Array<number> = []
let errors = 0
const started = performance.now()
const deadline = started + millis

/** Drives one socket; resolves when it has stopped at the deadline. */
const drive = () =>
  new Promise<void>((done, fail) => {
    const socket: Socket = connect(Number(target.port), target.hostname)
    socket.setNoDelay(true)
    let pending = Buffer.alloc(0)
    let sentAt = 0
    const next = () => {
      if (performance.now() >= deadline) {
        socket.end()
        return done()
      }
      sentAt = performance.now()
      socket.write(request)
    }
    socket.on("connect", next)
    socket.on("error", fail)
    socket.on("data", (chunk) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
      const end = pending.indexOf(headEnd)
      if (end < 0) return
      const head = pending.subarray(0, end).toString("latin1")
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head)
      if (!length) return fail(new Error(`an answer without Content-Length: ${head.split("\r\n")[0]}`))
      const total = end + headEnd.length + Number(length[1])
      if (pending.length < total) return
      latencies.push(performance.now() - sentAt)
      if (!head.startsWith("HTTP/1.1 200 ")) errors++
      pending = pending.subarray(total)
      next()
    })
  })

await Promise.all(Array.from({ length: connections }, drive))
const seconds = (performance.now() - started) / 1000
const sorted = Float64Array.from(latencies).sort()
const percentile = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0
const result: LoadResult = {
  requests: latencies.length,
  errors,
  seconds,
  p50Ms: percentile(50),
  p99Ms: percentile(99)
}
process.stdout.write(`${JSON.stringify(result)}\n`)
