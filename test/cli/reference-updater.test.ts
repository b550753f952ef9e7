// The reference updater (troupe updater --fake) spoken to through the service's own client over
// its socket, on a TestClock: the phases one per 200 ms, the latest 20 receipts kept (an older
// one is not_found), the log window's byte bound with its cursor, an Idempotency-Key replayed, and
// its socket path (a stale socket replaced, any other file kept).
import { spawnSync } from "node:child_process"
import { lstat, mkdtemp, readFile, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { it } from "@effect/vitest"
import { serveReferenceUpdater } from "@troupe/cli/deployment/UpdaterSocket"
import { makeUpdater } from "@troupe/domain/deployment/Updater"
import { Effect, Exit } from "effect"
import { TestClock } from "effect/testing"
import { uuidv7 } from "uuidv7"
import { expect } from "vitest"

const socketPath = Effect.acquireRelease(
  Effect.promise(() => mkdtemp(join(tmpdir(), "troupe-reference-updater-"))),
  (directory) => Effect.promise(() => rm(directory, { recursive: true, force: true }))
).pipe(Effect.map((directory) => join(directory, "updater.sock")))

const serve = Effect.gen(function* () {
  const path = yield* socketPath
  yield* serveReferenceUpdater(path)
  const updater = makeUpdater(path)
  const { candidate } = yield* updater.call("check", { tag: "latest", backup: true })
  const upgrade = (key = uuidv7()) =>
    updater.call("upgrade", { idempotency_key: key, actor_public_id: null, candidate: candidate! })
  return { updater, upgrade }
})

it.effect("walks one phase per 200 ms, one log entry each, and keeps the latest 20 receipts", () =>
  Effect.gen(function* () {
    const { updater, upgrade } = yield* serve
    const first = (yield* upgrade()).operation
    yield* TestClock.adjust("199 millis")
    expect((yield* updater.call("operation", { id: first.id })).operation.phase).toBe("accepted")
    yield* TestClock.adjust("1 millis")
    expect((yield* updater.call("operation", { id: first.id })).operation.phase).toBe("preparing")
    yield* TestClock.adjust("1600 millis")
    expect((yield* updater.call("operation", { id: first.id })).operation).toMatchObject({
      phase: "completed",
      status: "succeeded"
    })
    const window = yield* updater.call("log", { id: first.id, cursor: null, max_bytes: 40 })
    expect(window.entries.map((entry) => entry.text)).toEqual(["preparing: done", "draining: done"])
    const rest = yield* updater.call("log", { id: first.id, cursor: window.next_cursor, max_bytes: 65536 })
    expect(rest.entries).toHaveLength(7)
    for (let upgrades = 1; upgrades <= 20; upgrades++) {
      yield* upgrade()
      yield* TestClock.adjust("1800 millis")
    }
    const gone = yield* Effect.exit(updater.call("operation", { id: first.id }))
    expect(gone).toMatchObject({ _tag: "Failure" })
    expect(Exit.isFailure(gone) && gone.cause.reasons[0]).toMatchObject({ error: { code: "not_found" } })
    const described = yield* updater.call("describe", {})
    expect(described.last_operation?.status).toBe("succeeded")
  }).pipe(Effect.scoped)
)

it.effect("replays a key's receipt and refuses a second upgrade while one runs", () =>
  Effect.gen(function* () {
    const { upgrade } = yield* serve
    const key = uuidv7()
    const accepted = (yield* upgrade(key)).operation
    expect((yield* upgrade(key)).operation.id).toBe(accepted.id)
    const busy = yield* Effect.exit(upgrade())
    expect(Exit.isFailure(busy) && busy.cause.reasons[0]).toMatchObject({ error: { code: "upgrade_in_progress" } })
  }).pipe(Effect.scoped)
)

it.effect("replaces a stale socket but refuses, and keeps, any other file at its path", () =>
  Effect.gen(function* () {
    const path = yield* socketPath
    yield* Effect.promise(() => writeFile(path, "not a socket"))
    const refused = yield* Effect.exit(Effect.scoped(serveReferenceUpdater(path)))
    expect(Exit.isFailure(refused)).toBe(true)
    expect(yield* Effect.promise(() => readFile(path, "utf8"))).toBe("not a socket")
    yield* Effect.promise(() => rm(path))
    // A stale socket, as a killed updater leaves it.
    spawnSync(process.execPath, [
      "-e",
      `require("node:net").createServer().listen(${JSON.stringify(path)}, () => process.kill(process.pid, "SIGKILL"))`
    ])
    expect((yield* Effect.promise(() => lstat(path))).isSocket()).toBe(true)
    yield* serveReferenceUpdater(path)
    expect((yield* makeUpdater(path).call("describe", {})).installed?.release).toBe("2512150000")
  }).pipe(Effect.scoped)
)
