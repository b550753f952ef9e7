// The console logger of `troupe serve`: the default logger's line with annotations as key=value,
// and the lines of a busy moment written together (one write, not one per line), the pending
// ones when the logger's scope closes.
import { consoleLoggerLayer } from "@troupe/server/ConsoleLogger"
import { Effect } from "effect"
import { afterEach, expect, it, vi } from "vitest"

afterEach(() => {
  vi.restoreAllMocks()
})

/** Runs `program` under the console logger and answers every chunk it wrote to stdout. */
const written = async (program: Effect.Effect<void>) => {
  const chunks: Array<string> = []
  vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    chunks.push(String(chunk))
    return true
  })
  await Effect.runPromise(program.pipe(Effect.provide(consoleLoggerLayer)))
  vi.restoreAllMocks()
  return chunks
}

it("writes the lines logged together in one write, the pending ones when it stops", async () => {
  const chunks = await written(
    Effect.forEach(["first", "second", "third"], (line) => Effect.logInfo(line), { discard: true })
  )
  expect(chunks).toHaveLength(1)
  expect(chunks[0]!.split("\n")).toEqual([
    expect.stringMatching(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO \(#\d+\): first$/),
    expect.stringMatching(/ INFO \(#\d+\): second$/),
    expect.stringMatching(/ INFO \(#\d+\): third$/),
    ""
  ])
})

it("shows annotations after the message as key=value, quoting a value that is not a plain word", async () => {
  const chunks = await written(
    Effect.logWarning("GET /api/v1/profile 200 1ms").pipe(
      Effect.annotateLogs({ request_id: "0b8a1c3e-req", note: "two words" })
    )
  )
  expect(chunks.join("")).toMatch(
    /^\[[\d:.]+\] WARN \(#\d+\): GET \/api\/v1\/profile 200 1ms request_id=0b8a1c3e-req note="two words"\n$/
  )
})
