// Wake-ups for the timer, job and message runners: a step that set a timer, queued a job or told
// a message nudges them after commit, so they need not wait for their next poll.
import { Context, Effect, Layer, Queue } from "effect"

export class RunnerSignals extends Context.Service<
  RunnerSignals,
  { readonly timers: Queue.Queue<void>; readonly jobs: Queue.Queue<void>; readonly messages: Queue.Queue<void> }
>()("@troupe/actors/RunnerSignals") {
  static readonly layer = Layer.effect(
    RunnerSignals,
    Effect.gen(function* () {
      return RunnerSignals.of({
        timers: yield* Queue.sliding<void>(1),
        jobs: yield* Queue.sliding<void>(1),
        messages: yield* Queue.sliding<void>(1)
      })
    })
  )
}
