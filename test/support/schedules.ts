// Schedules from tests: waiting until a condition over the database holds (checked now and after
// every step any actor commits, never by sleeping), and reading a schedule's row and executions
// straight from the database (clock tests move the clock past every token's life).
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { type Duration, Effect, Stream } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { TestServer } from "./server.ts"

export const waitForSteps = (
  server: TestServer,
  done: () => Promise<boolean>,
  timeout: Duration.Input = "20 seconds"
) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const notices = yield* (yield* EventBus).subscribe(stepChannel)
        if (yield* Effect.promise(done)) return
        yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.mapEffect(() => Effect.promise(done)),
          Stream.takeUntil((finished) => finished),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout(timeout))
  )

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
