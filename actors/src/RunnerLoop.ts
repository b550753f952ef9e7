// The loop the timer and job runners share: run a pass, then sleep until the next row falls due,
// a step signals new work, or a second passes, whichever comes first. A failed pass is logged
// and the loop goes on.
import { Clock, Duration, Effect, Queue, type Scope } from "effect"

const maxIdle = Duration.seconds(1)

export const runnerLoop = <E, R>(
  name: string,
  pass: Effect.Effect<unknown, E, R>,
  signal: Queue.Queue<void>,
  nextDue: Effect.Effect<Date | undefined, never, R>
): Effect.Effect<void, never, R | Scope.Scope> => {
  const untilNext = Effect.gen(function* () {
    const next = yield* nextDue
    if (next === undefined) return maxIdle
    return Duration.min(Duration.millis(Math.max(0, next.getTime() - (yield* Clock.currentTimeMillis))), maxIdle)
  })
  return Effect.asVoid(
    Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          yield* pass
          yield* Queue.take(signal).pipe(Effect.timeoutOption(yield* untilNext))
        }).pipe(Effect.catchCause((cause) => Effect.logError(`${name} pass failed`, cause)))
      )
    )
  )
}
