// Following an upgrade's progress stream from the command line: reads the server's
// deployment.progress.v1 events, prints each log entry once, and reconnects with Last-Event-ID
// after each window of ten observations until the receipt is terminal. A deployment.error.v1
// ends the following with its code and message.
import type { UpgradeLog, UpgradeReceipt } from "@troupe/contracts/platform/Deployment"
import { Console, Effect, Stream } from "effect"
import { Sse } from "effect/encoding"
import { HttpClient, HttpClientRequest } from "effect/http"
import { OperatorError, serverUrl } from "../operators.ts"

interface Window {
  readonly cursor: string | undefined
  readonly receipt: UpgradeReceipt | undefined
  readonly fault: { readonly code: string; readonly message: string } | undefined
}

/** Reads one connection's window of events, printing each new entry. */
const readWindow = (id: string, token: string, cursor: string | undefined) =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const url = `${serverUrl()}/api/v1/admin/deployment/upgrades/${encodeURIComponent(id)}/stream`
    const response = yield* client.execute(
      HttpClientRequest.get(url).pipe(
        HttpClientRequest.bearerToken(token),
        cursor === undefined ? (request) => request : HttpClientRequest.setHeader("last-event-id", cursor)
      )
    )
    if (response.status !== 200) {
      const body = yield* Effect.orElseSucceed(response.json, () => undefined)
      const error = (body as { error?: { code: string; message: string } } | undefined)?.error
      return yield* Effect.fail(
        new OperatorError(`${response.status} ${error?.code ?? ""}: ${error?.message ?? "no stream"}`)
      )
    }
    let window: Window = { cursor, receipt: undefined, fault: undefined }
    const lines: Array<string> = []
    const parser = Sse.makeParser((event) => {
      if (event._tag !== "Event") return
      if (event.event === "deployment.error.v1") {
        window = { ...window, fault: JSON.parse(event.data) }
        return
      }
      const log: UpgradeLog = JSON.parse(event.data)
      for (const entry of log.entries) lines.push(entry.text)
      window = { ...window, cursor: log.next_cursor, receipt: log.operation }
    })
    yield* response.stream.pipe(
      Stream.decodeText(),
      Stream.runForEach((chunk) =>
        Effect.gen(function* () {
          parser.feed(chunk)
          for (const line of lines.splice(0)) yield* Console.log(`  ${line}`)
        })
      )
    )
    return window
  })

/** Follows upgrade `id` to its end; answers the terminal receipt. */
export const followUpgrade = (id: string, token: string) =>
  Effect.gen(function* () {
    let cursor: string | undefined
    while (true) {
      const window = yield* readWindow(id, token, cursor)
      if (window.fault !== undefined) {
        return yield* Effect.fail(new OperatorError(`${window.fault.code}: ${window.fault.message}`))
      }
      if (window.receipt !== undefined && window.receipt.status !== "running") return window.receipt
      cursor = window.cursor
    }
  })
