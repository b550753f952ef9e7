// The fan-out scenario's bare twin (run as its own process by scripts/bench/conversationFanout.ts):
// a `ws` server that does nothing but hold its clients. Every notification on BENCH_TWIN_CHANNEL
// (LISTENed through an @effect/sql-pg connection, as the server hears step notices) carries a JSON
// array of frames, each sent as it is to every open client. A plain GET answers 200 once the
// LISTEN is confirmed, so the bench knows no notification can be missed.
import { createServer } from "node:http"
import { PgClient } from "@effect/sql-pg"
import { Effect, ManagedRuntime, Redacted, Stream } from "effect"
import { WebSocketServer } from "ws"

let listening = false
const http = createServer((_, response) => {
  response.writeHead(listening ? 200 : 503, { "content-length": 0 })
  response.end()
}).listen(Number(process.env.PORT), "127.0.0.1")
const sockets = new WebSocketServer({ server: http, perMessageDeflate: false })

const broadcast = (payload: string) => {
  const frames = JSON.parse(payload) as Array<string>
  for (const client of sockets.clients) for (const frame of frames) client.send(frame)
}

const runtime = ManagedRuntime.make(
  PgClient.layer({
    url: Redacted.make(process.env.DATABASE_URL!),
    maxConnections: 1,
    applicationName: "troupe-bench-fanout-twin"
  })
)
runtime.runFork(
  Effect.gen(function* () {
    const notifications = yield* (yield* PgClient.PgClient).listen(process.env.BENCH_TWIN_CHANNEL!)
    listening = true
    yield* Stream.fromQueue(notifications).pipe(
      Stream.runForEach((notification) => Effect.sync(() => broadcast(notification.payload)))
    )
  }).pipe(Effect.scoped, Effect.orDie)
)

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    for (const client of sockets.clients) client.terminate()
    http.close()
    void runtime.dispose().finally(() => process.exit(0))
  })
}
