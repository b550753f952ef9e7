// A wall clock tests can move forward: real time plus an offset. Sleeps use the real clock, so
// nothing else in the server changes; only "now" jumps.
import { type Clock, Duration, Effect } from "effect"

export interface MovableClock {
  readonly clock: Clock.Clock
  readonly advance: (duration: Duration.Input) => void
}

export const makeMovableClock = (real: Clock.Clock): MovableClock => {
  let offset = 0
  const millis = () => real.currentTimeMillisUnsafe() + offset
  const nanos = () => real.currentTimeNanosUnsafe() + BigInt(offset) * 1_000_000n
  return {
    clock: {
      currentTimeMillisUnsafe: millis,
      currentTimeMillis: Effect.sync(millis),
      currentTimeNanosUnsafe: nanos,
      currentTimeNanos: Effect.sync(nanos),
      monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
      monotonicTimeNanos: real.monotonicTimeNanos,
      sleep: (duration) => real.sleep(duration)
    },
    advance: (duration) => {
      offset += Duration.toMillis(Duration.fromInputUnsafe(duration))
    }
  }
}
