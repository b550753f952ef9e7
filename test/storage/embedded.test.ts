// The embedded database is reachable only by the OS user running Troupe: PGlite asks no
// password, so it is served on a Unix socket in a fresh 0700 directory, never on a TCP port.
import { existsSync, statSync } from "node:fs"
import { mkdtemp, rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { startEmbedded } from "@troupe/storage/Embedded"
import { Effect, Exit, Scope } from "effect"
import { afterAll, expect, it } from "vitest"

const dataDirs: Array<string> = []
afterAll(() => Promise.all(dataDirs.map((dir) => rm(dir, { recursive: true, force: true }))))

it("serves on a Unix socket in a private directory, removed when the database closes", async () => {
  const dataDir = join(await mkdtemp(join(tmpdir(), "troupe-embedded-")), "pg")
  dataDirs.push(dirname(dataDir))
  const scope = Effect.runSync(Scope.make())
  const path = await Effect.runPromise(Scope.provide(startEmbedded(dataDir), scope))
  expect(statSync(path).isSocket()).toBe(true)
  expect(statSync(dirname(path)).mode & 0o777).toBe(0o700)
  await Effect.runPromise(Scope.close(scope, Exit.void))
  expect(existsSync(dirname(path))).toBe(false)
})
