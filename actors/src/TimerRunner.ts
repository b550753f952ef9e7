// The timer runner: delivers due timer rows to their actors as events (eight actors at once, each
// actor's in due order). It wakes when a step sets a timer due before its planned wake (Signals.ts),
// when the next due time arrives, and at least every second (so it finds timers other nodes set);
// at boot it delivers whatever fell due while the process was down. Several nodes may run it: a
// timer is consumed by exactly one step (its row is deleted in that step's transaction).
import * as Repo from "@troupe/storage/repositories/Actors"
import { Clock, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ActorHost } from "./ActorHost.ts"
import type { ActorEvent } from "./Binding.ts"
import { runnerLoop } from "./RunnerLoop.ts"
import { RunnerSignals } from "./Signals.ts"
import { actorAddress } from "./Tracing.ts"

const batch = 100
/** Actors whose due timers are delivered at once (each actor still steps one event at a time). */
const actorsAtOnce = 8

export class TimerRunner extends Context.Service<
  TimerRunner,
  {
    /** Delivers every timer due now; answers how many were delivered. */
    readonly runDue: Effect.Effect<number>
  }
>()("@troupe/actors/TimerRunner") {
  static readonly layer = Layer.effect(
    TimerRunner,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const host = yield* ActorHost
      const signals = yield* RunnerSignals

      const runDue = Effect.gen(function* () {
        let delivered = 0
        for (;;) {
          const now = new Date(yield* Clock.currentTimeMillis)
          const due = yield* Repo.dueTimers(now, batch)
          // One actor's timers in their order; several actors' at once (as the message runner).
          const byActor = Map.groupBy(due, (timer) => `${timer.kind}:${timer.actor_id}`)
          yield* Effect.forEach(
            byActor.values(),
            (timers) =>
              Effect.forEach(
                timers,
                (timer) =>
                  host
                    .deliver({ _tag: "Timer", timer }, timer.event as ActorEvent)
                    .pipe(Effect.annotateLogs(actorAddress(timer.kind, timer.actor_id))),
                { discard: true }
              ),
            { concurrency: actorsAtOnce, discard: true }
          )
          delivered += due.length
          if (due.length < batch) return delivered
        }
      }).pipe(Effect.orDie, Effect.provideService(SqlClient, sql))

      yield* runnerLoop(
        "timer runner",
        runDue,
        signals.timers,
        Repo.nextTimerDue.pipe(Effect.orDie, Effect.provideService(SqlClient, sql)),
        signals.planTimerWake
      )
      return TimerRunner.of({ runDue })
    })
  )
}
