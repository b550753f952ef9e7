// Following an upgrade's progress stream from the command line: reads the server's
// deployment.progress.v1 events, prints each log entry once, and reconnects with Last-Event-ID
// after each window of ten observations until the receipt is terminal. An upgrade may stop and
// restart the server itself, so a server that cannot be reached or answers 503 is waited for
// (every second, up to the spec's five-minute drain and then as long again); a
// deployment.error.v1 or another refusal ends the following with its code and message.
import type { UpgradeLog, UpgradeReceipt } from "@troupe/contracts/platform/Deployment"
import { Console, Data, Duration, Effect, Schedule, Stream } from "effect"
import { Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest } from "effect/http"
import { OperatorError, serverUrl } from "../operators.ts"

/** What the following has seen so far, kept across connections (a dropped one included). */
interface Following {
  cursor: string | undefined
  receipt: UpgradeReceipt | undefined
  fault: { readonly code: string; readonly message: string } | undefined
  /** True while the server is away (said once per absence). */
  away: boolean
}

/** The server is not there for now: unreachable, cut off mid-stream, or answering 503. */
class Away extends Data.TaggedError("Away")<{ readonly message: string }> {}

const waitForServer = Schedule.max([Schedule.spaced(Duration.seconds(1)), Schedule.recurs(600)])

/** Reads one connection's window of events into `following`, printing each new entry. */
const readWindow = (id: string, token: string, following: Following) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const url = `${serverUrl()}/api/v1/admin/deployment/upgrades/${encodeURIComponent(id)}/stream`
    const response = yield* client
      .execute(
        HttpClientRequest.get(url).pipe(
          HttpClientRequest.bearerToken(token),
          following.cursor === undefined
            ? (request) => request
            : HttpClientRequest.setHeader("last-event-id", following.cursor)
        )
      )
      .pipe(Effect.mapError((error) => new Away({ message: error.message })))
    if (response.status !== 200) {
      const body = yield* Effect.orElseSucceed(response.json, () => undefined)
      const error = (body as { error?: { code: string; message: string } } | undefined)?.error
      // A server stopped or starting answers 503 (not_ready, or a proxy's page); the updater's own 503s are final.
      if (response.status === 503 && error?.code !== "updater_unavailable") {
        return yield* new Away({ message: `503 ${error?.code ?? ""}`.trim() })
      }
      return yield* Effect.fail(
        new OperatorError(`${response.status} ${error?.code ?? ""}: ${error?.message ?? "no stream"}`)
      )
    }
    if (following.away) yield* Console.log(`  (${serverUrl()} is back)`)
    following.away = false
    const lines: Array<string> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag !== "Event") return
      if (event.event === "deployment.error.v1") {
        following.fault = JSON.parse(event.data)
        return
      }
      const log: UpgradeLog = JSON.parse(event.data)
      for (const entry of log.entries) lines.push(entry.text)
      following.cursor = log.next_cursor
      following.receipt = log.operation
    })
    yield* response.stream.pipe(
      Stream.decodeText(),
      Stream.runForEach((chunk) =>
        Effect.gen(function* () {
          parser.feed(chunk)
          for (const line of lines.splice(0)) yield* Console.log(`  ${line}`)
        })
      ),
      Effect.mapError((error) => new Away({ message: error.message }))
    )
  })

/** Follows upgrade `id` to its end; answers the terminal receipt. */
export const followUpgrade = (id: string, token: string) =>
  Effect.gen(function* () {
    const following: Following = { cursor: undefined, receipt: undefined, fault: undefined, away: false }
    const window = readWindow(id, token, following).pipe(
      Effect.tapError((error) =>
        error instanceof Away && !following.away
          ? Effect.andThen(
              Effect.sync(() => {
                following.away = true
              }),
              Console.log(`  (cannot reach ${serverUrl()}: ${error.message}; waiting for it)`)
            )
          : Effect.void
      ),
      Effect.retry({ while: (error) => error instanceof Away, schedule: waitForServer }),
      Effect.mapError((error) =>
        error instanceof Away ? new OperatorError(`cannot reach ${serverUrl()}: ${error.message}`) : error
      )
    )
    while (true) {
      yield* window
      if (following.fault !== undefined) {
        return yield* Effect.fail(new OperatorError(`${following.fault.code}: ${following.fault.message}`))
      }
      if (following.receipt !== undefined && following.receipt.status !== "running") return following.receipt
    }
  })
