// A runtime "process" for tests: the actor runtime over a test database with a movable clock.
// Disposing it is a crash or shutdown; starting another over the same database is a restart.
import { ActorHost, type HostOptions } from "@troupe/actors/ActorHost"
import type { Binding } from "@troupe/actors/Binding"
import { JobRunner } from "@troupe/actors/JobRunner"
import { MessageRunner } from "@troupe/actors/MessageRunner"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { migratedDatabase } from "@troupe/server/Server"
import { newPublicId } from "@troupe/storage/Ids"
import { Clock, Effect, Layer, ManagedRuntime, References } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { MovableClock } from "../support/clock.ts"
import type { TestDatabase } from "../support/database.ts"

export const startRuntime = async (
  database: TestDatabase,
  clock: MovableClock,
  bindings: ReadonlyArray<Binding>,
  options?: HostOptions
) => {
  const layer = runtimeLayer(bindings, options).pipe(
    Layer.provideMerge(migratedDatabase(database.config)),
    Layer.provideMerge(Layer.succeed(Clock.Clock, clock.clock)),
    Layer.provideMerge(Layer.succeed(References.MinimumLogLevel, "None"))
  )
  const runtime = ManagedRuntime.make(layer)
  const run = <A, E>(effect: Effect.Effect<A, E, any>): Promise<A> => runtime.runPromise(effect as Effect.Effect<A, E>)
  await run(Effect.void)
  return {
    run,
    host: () => run(Effect.map(ActorHost, (host) => host)),
    sql: <A extends object = Record<string, unknown>>(
      f: (sql: SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>
    ) => run(Effect.flatMap(SqlClient, f)),
    runDueTimers: () => run(Effect.flatMap(TimerRunner, (runner) => runner.runDue)),
    runReadyJobs: () => run(Effect.flatMap(JobRunner, (runner) => runner.runReady)),
    runReadyMessages: () => run(Effect.flatMap(MessageRunner, (runner) => runner.runReady)),
    /** Starts `count` workers of `kind` (the worker machine's input), answering their ids. */
    newWorkers: async (kind: string, count: number) => {
      const ids = Array.from({ length: count }, () => newPublicId())
      for (const id of ids) await run(Effect.flatMap(ActorHost, (host) => host.create(kind, id, { start: 0 })))
      return ids
    },
    dispose: () => runtime.dispose()
  }
}

export type TestRuntime = Awaited<ReturnType<typeof startRuntime>>
