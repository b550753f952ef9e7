// Wake-ups for the timer, job and message runners: a step that set a timer, queued a job or told
// a message nudges them after commit, so they need not wait for their next poll. A timer wakes the
// timer runner only when it falls due before the runner's planned wake (`timerSet`): the runner
// plans a wake at the next due time it read, within a second, and re-reads at each wake.
import { Context, Effect, Layer, Queue } from "effect"

export class RunnerSignals extends Context.Service<
  RunnerSignals,
  {
    readonly timers: Queue.Queue<void>
    /**
     * Wakes the timer runner for a timer just set (committed) due at `dueAt`, `dueNow` when due
     * at once, unless the runner already plans to wake by then.
     */
    readonly timerSet: (dueAt: number, dueNow: boolean) => Effect.Effect<void>
    /** The timer runner's planned wake (epoch millis): +∞ while it runs a pass, then its sleep's end. */
    readonly planTimerWake: (at: number) => void
    readonly jobs: Queue.Queue<void>
    readonly messages: Queue.Queue<void>
  }
>()("@troupe/actors/RunnerSignals") {
  static readonly layer = Layer.effect(
    RunnerSignals,
    Effect.gen(function* () {
      const timers = yield* Queue.sliding<void>(1)
      let plannedTimerWake = Number.POSITIVE_INFINITY
      return RunnerSignals.of({
        timers,
        timerSet: (dueAt, dueNow) =>
          dueNow || dueAt < plannedTimerWake ? Queue.offer(timers, undefined).pipe(Effect.asVoid) : Effect.void,
        planTimerWake: (at) => {
          plannedTimerWake = at
        },
        jobs: yield* Queue.sliding<void>(1),
        messages: yield* Queue.sliding<void>(1)
      })
    })
  )
}
