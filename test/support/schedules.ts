// Schedules from tests: reading a schedule's row and executions straight from the database (clock
// tests move the clock past every token's life). Waiting on steps is steps.ts's waitForSteps.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

export interface ExecutionRow {
  readonly scheduled_for: Date
  readonly created_at: Date
  readonly turn_status: string | null
  readonly child: string
}

/** A schedule's executions, oldest first, with their child's first turn's status. */
export const executionsOf = (server: TestServer, schedulePublicId: string) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<ExecutionRow>`
        SELECT e.scheduled_for, e.created_at, t.status AS turn_status, c.public_id::text AS child
        FROM schedule_executions e
        JOIN schedules s ON s.id = e.schedule_id
        JOIN conversations c ON c.id = e.child_conversation_id
        LEFT JOIN conversation_turns t ON t.conversation_id = c.id AND t.input_public_id = e.input_public_id
        WHERE s.public_id = ${schedulePublicId} ORDER BY e.id`
    )
  )

export const scheduleRowOf = (server: TestServer, schedulePublicId: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{ status: string; next_run_at: Date | null; last_error_code: string | null; lock_version: number }>`
          SELECT status, next_run_at, last_error_code, lock_version FROM schedules WHERE public_id = ${schedulePublicId}`,
        (rows) => rows[0]!
      )
    )
  )

/** The server's "now" (the moved clock's). */
export const serverNow = (server: TestServer) => server.run(Effect.clockWith((clock) => clock.currentTimeMillis))

/** Moves the server's clock forward to `instant`. */
export const moveClockTo = async (server: TestServer, instant: string | number) => {
  const target = typeof instant === "number" ? instant : Date.parse(instant)
  const current = await serverNow(server)
  if (target > current) server.clock.advance(`${target - current} millis`)
}
