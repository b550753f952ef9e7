// A kill -9 test's world: a fresh PostgreSQL database with a real `troupe serve` on it and a step
// watch, all killed, closed and dropped after the file's tests.
import { afterAll } from "vitest"
import { freshPostgres, type TestDatabase } from "./database.ts"
import { openStepWatch, type StepWatch } from "./step-watch.ts"
import { killAll, troupeServe } from "./troupe-process.ts"

/** Registers the file's cleanup; `open()` makes one database, its first server and its watch. */
export const crashWorld = () => {
  const databases = new Set<TestDatabase>()
  const watches = new Set<StepWatch>()
  afterAll(async () => {
    await killAll()
    for (const watch of watches) await watch.close()
    for (const database of databases) await database.drop()
  })
  return {
    open: async () => {
      const database = await freshPostgres()
      databases.add(database)
      const first = await troupeServe(database.config)
      const watch = await openStepWatch(database)
      watches.add(watch)
      return { database, first, watch }
    }
  }
}
