// The service's end of the updater protocol (domain/deployment/Updater.ts) against scripted
// sockets: the request line it sends, answers decoded by op, the updater's refusal codes passed
// through, anything else (no socket, a malformed or foreign answer, an unknown code) unavailable,
// and the time bounds, 5 s for most ops and 120 s for a check, on a TestClock.
import { mkdtemp, rm } from "node:fs/promises"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { it as effectIt } from "@effect/vitest"
import { makeUpdater } from "@troupe/domain/deployment/Updater"
import { Effect, Exit, Fiber } from "effect"
import { TestClock } from "effect/testing"
import { afterAll, describe, expect, it } from "vitest"

const directories: Array<string> = []
const servers: Array<Server> = []
afterAll(async () => {
  for (const server of servers) await new Promise<void>((closed) => server.close(() => closed()))
  for (const directory of directories) await rm(directory, { recursive: true, force: true })
})

/** A socket that answers each request line with `respond(request)` (undefined: never answers). */
const scripted = async (respond: (request: { id: string; op: string; args: unknown }) => unknown) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-updater-client-"))
  directories.push(directory)
  const path = join(directory, "updater.sock")
  const received: Array<string> = []
  const server = createServer((socket) => {
    let buffer = ""
    socket.on("data", (chunk) => {
      buffer += chunk
      if (!buffer.includes("\n")) return
      const line = buffer.slice(0, buffer.indexOf("\n"))
      received.push(line)
      const answer = respond(JSON.parse(line))
      if (answer !== undefined) socket.end(typeof answer === "string" ? answer : `${JSON.stringify(answer)}\n`)
    })
    socket.on("error", () => socket.destroy())
  })
  await new Promise<void>((listening) => server.listen(path, listening))
  servers.push(server)
  return { path, received }
}

const receipt = {
  id: "019a0000-0000-7000-8000-000000000000",
  idempotency_key: "019a0000-0000-7000-8000-000000000001",
  actor_public_id: null,
  target: { release: "2601010000", images: [] },
  phase: "accepted",
  status: "running",
  accepted_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  backup: true,
  database_backup: null
}

const failureOf = <A, E>(exit: Exit.Exit<A, E>) => (Exit.isFailure(exit) ? exit.cause.reasons[0] : undefined)
const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromiseExit(effect)

describe("the updater client", () => {
  it("sends one line {id, op, args} and decodes the op's result", async () => {
    const socket = await scripted((request) => ({ id: request.id, ok: true, result: { operation: receipt } }))
    const exit = await run(makeUpdater(socket.path).call("operation", { id: receipt.id }))
    expect(exit).toEqual(Exit.succeed({ operation: receipt }))
    const sent = JSON.parse(socket.received[0]!)
    expect(sent).toEqual({ id: expect.any(String), op: "operation", args: { id: receipt.id } })
  })

  it("passes the protocol's refusal codes through and takes anything else as unavailable", async () => {
    const answers: Array<(id: string) => unknown> = [
      (id) => ({ id, ok: false, error: { code: "upgrade_in_progress", message: "busy" } }),
      (id) => ({ id, ok: false, error: { code: "disk_on_fire", message: "?" } }),
      () => ({ id: "someone else", ok: true, result: {} }),
      (id) => ({ id, ok: true, result: { operation: { ...receipt, status: "pondering" } } }),
      () => "not json\n",
      () => ""
    ]
    let next = 0
    const socket = await scripted((request) => answers[next++]!(request.id))
    const updater = makeUpdater(socket.path)
    const tags: Array<unknown> = []
    for (let index = 0; index < answers.length; index++) {
      const reason = failureOf(await run(updater.call("operation", { id: receipt.id })))
      tags.push(reason && "error" in reason ? reason.error : reason)
    }
    expect(tags[0]).toMatchObject({ _tag: "UpdaterRefused", code: "upgrade_in_progress", message: "busy" })
    for (const tag of tags.slice(1)) expect(tag).toMatchObject({ _tag: "UpdaterUnavailable" })
  })

  it("no socket, or no setting, is unavailable", async () => {
    const missing = failureOf(await run(makeUpdater("/nonexistent/updater.sock").call("describe", {})))
    expect(missing).toMatchObject({ error: { _tag: "UpdaterUnavailable" } })
    const unset = makeUpdater(undefined)
    expect(unset.configured).toBe(false)
    expect(failureOf(await run(unset.call("describe", {})))).toMatchObject({ error: { _tag: "UpdaterUnavailable" } })
  })

  effectIt.effect("gives up after 5 s, and after 120 s on a check", () =>
    Effect.gen(function* () {
      const silent = yield* Effect.promise(() => scripted(() => undefined))
      const updater = makeUpdater(silent.path)
      const described = yield* Effect.forkChild(Effect.exit(updater.call("describe", {})))
      const checked = yield* Effect.forkChild(Effect.exit(updater.call("check", { tag: "latest", backup: true })))
      yield* TestClock.adjust("4999 millis")
      expect(described.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 millis")
      expect(failureOf(yield* Fiber.join(described))).toMatchObject({ error: { _tag: "UpdaterUnavailable" } })
      yield* TestClock.adjust("114 seconds")
      expect(checked.pollUnsafe()).toBeUndefined()
      yield* TestClock.adjust("1 second")
      expect(failureOf(yield* Fiber.join(checked))).toMatchObject({ error: { _tag: "UpdaterUnavailable" } })
    })
  )
})
