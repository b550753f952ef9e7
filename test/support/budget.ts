// Request budgets in tests: move to the start of a window (a minute's, or the limit's own) and
// count requests in it as if they had been made, so a test reaches a limit of thousands without
// sending them.
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

/**
 * Puts the clock just past a window boundary (of `windowSeconds`, a minute unless given), so the
 * window has (almost) all its length left and a burst in it cannot straddle two windows.
 */
export const startOfWindow = async (server: TestServer, windowSeconds = 60) => {
  const at = await server.run(Clock.currentTimeMillis)
  const length = windowSeconds * 1000
  server.clock.advance(length - (at % length) + 200)
}

/** The budget subject of a caller (its user row). */
export const callerKey = async (server: TestServer, publicId: string) => {
  const [row] = await server.run(
    Effect.flatMap(SqlClient, (sql) => sql<{ id: bigint }>`SELECT id FROM users WHERE public_id = ${publicId}`)
  )
  return `user:${row!.id}`
}

const currentWindow = async (server: TestServer) => {
  const at = await server.run(Clock.currentTimeMillis)
  return new Date(Math.floor(at / 60_000) * 60_000)
}

/** Requests of `subject` counted in the current window of `scope`. */
export const spent = async (server: TestServer, scope: string, subject: string) => {
  const windowStart = await currentWindow(server)
  const rows = await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ hits: number }>`
        SELECT hits FROM rate_limit_windows
        WHERE scope = ${scope} AND subject = ${subject} AND window_start = ${windowStart}`
    )
  )
  return rows[0]?.hits ?? 0
}

/** Counts `hits` requests of `subject` in the current window of `scope`, as if they were made. */
export const spend = async (server: TestServer, scope: string, subject: string, hits: number) => {
  const windowStart = await currentWindow(server)
  await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql`
        INSERT INTO rate_limit_windows (scope, subject, window_start, hits)
        VALUES (${scope}, ${subject}, ${windowStart}, ${hits})
        ON CONFLICT (scope, subject, window_start) DO UPDATE SET hits = ${hits}`
    )
  )
}
