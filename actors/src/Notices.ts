// Queued bus notices (PostgreSQL). A NOTIFY holds a database-wide lock from its transaction's
// commit until the commit's WAL flush is done, so steps that NOTIFY commit one at a time. A step
// that commits while other steps of this node are committing therefore queues its notices in
// `actor_notices`, in its own statement (ActorSteps.ts), and this sender NOTIFYs them a few
// milliseconds later in batches whose commits wait for no flush. It also sends, within a second,
// what a node that died left queued. Listeners re-read the durable rows on a notice, so a notice
// that arrives late, twice or after a newer one changes nothing for them.
import * as Steps from "@troupe/storage/repositories/ActorSteps"
import { Effect, Queue } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { runnerLoop } from "./RunnerLoop.ts"

/** How long queued notices wait for others to share their batch. */
const batchWindow = "5 millis"
const batchSize = 500

/** Starts the sender; answers the signal a step gives after committing queued notices. */
export const noticeSender = (sql: SqlClient) =>
  Effect.gen(function* () {
    const signal = yield* Queue.sliding<void>(1)
    const sendAll: Effect.Effect<void, unknown> = Effect.flatMap(Steps.sendQueuedNotices(batchSize), (sent) =>
      sent === batchSize ? sendAll : Effect.void
    ).pipe(Effect.provideService(SqlClient, sql))
    yield* runnerLoop(
      "notice sender",
      Effect.andThen(Effect.sleep(batchWindow), sendAll),
      signal,
      Effect.succeed(undefined)
    )
    return signal
  })
