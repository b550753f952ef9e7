// LOG_LEVEL governs every line `troupe serve` logs, not only the routes': at Warn nothing below a
// warning shows, the cluster's and the actors' lines included (the service's own start and stop
// lines excepted: they are the CLI's, always said).
import { afterAll, beforeAll, expect, it } from "vitest"
import { freshDatabase, type TestDatabase } from "../support/database.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

let database: TestDatabase

beforeAll(async () => {
  database = await freshDatabase()
})
afterAll(async () => {
  await killAll()
  await database?.drop()
})

it("LOG_LEVEL=Warn: no line below a warning, from any part of the server", { timeout: 120_000 }, async () => {
  const quiet = await troupeServe(database.config, process.execPath, { LOG_LEVEL: "Warn" })
  await quiet.stop()
  const below = quiet
    .output()
    .split("\n")
    .filter(
      (line) => / (INFO|DEBUG|TRACE) \(#\d+\): /.test(line) && !/: Troupe (listening|stopping|stopped)/.test(line)
    )
  expect(below).toEqual([])
})
