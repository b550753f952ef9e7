// The loop the timer, job and message runners share: run a pass, then sleep until the next row
// falls due, a step signals new work, or a second passes, whichever comes first. A failed pass is
// logged and the loop goes on (`planWake`, when given, is told when the loop next wakes by itself).
// Also the hourly reaper of retained rows (outbox, messages).
import { Clock, Duration, Effect, Queue, type Scope } from "effect"

const maxIdle = Duration.seconds(1)

export const runnerLoop = <E, R>(
  name: string,
  pass: Effect.Effect<unknown, E, R>,
  signal: Queue.Queue<void>,
  nextDue: Effect.Effect<Date | undefined, never, R>,
  /** Told +∞ as a pass starts (no wake planned), then the instant the loop's sleep ends. */
  planWake: (at: number) => void = () => {}
): Effect.Effect<void, never, R | Scope.Scope> => {
  const untilNext = Effect.gen(function* () {
    const next = yield* nextDue
    const now = yield* Clock.currentTimeMillis
    const sleep =
      next === undefined ? maxIdle : Duration.min(Duration.millis(Math.max(0, next.getTime() - now)), maxIdle)
    planWake(now + Duration.toMillis(sleep))
    return sleep
  })
  return Effect.asVoid(
    Effect.forkScoped(
      Effect.forever(
        Effect.gen(function* () {
          planWake(Number.POSITIVE_INFINITY)
          yield* pass
          yield* Queue.take(signal).pipe(Effect.timeoutOption(yield* untilNext))
        }).pipe(Effect.catchCause((cause) => Effect.logError(`${name} pass failed`, cause)))
      )
    )
  )
}

/** Runs `reap` now and then every hour for the life of the scope; a failure is logged. */
export const hourlyReaper = <E, R>(name: string, reap: Effect.Effect<unknown, E, R>) =>
  Effect.forkScoped(
    Effect.forever(
      reap.pipe(
        Effect.andThen(Effect.sleep(Duration.hours(1))),
        Effect.catchCause((cause) => Effect.logError(`${name} failed`, cause))
      )
    )
  )
