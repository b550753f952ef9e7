// The actor runtime as one layer: bindings, supervision, the host and its runners.
import { Clock, Effect, Layer } from "effect"
import { ActorHost, defaultHostOptions, type HostOptions } from "./ActorHost.ts"
import { type Binding, Bindings, bindingsOf } from "./Binding.ts"
import { Inspection } from "./Inspection.ts"
import { JobRunner } from "./JobRunner.ts"
import { MessageRunner } from "./MessageRunner.ts"
import { RunnerSignals } from "./Signals.ts"
import { Streams } from "./Streams.ts"
import { Supervision } from "./Supervision.ts"
import { TimerRunner } from "./TimerRunner.ts"

export const runtimeLayer = (bindings: ReadonlyArray<Binding>, options: HostOptions = defaultHostOptions) => {
  const base = Layer.mergeAll(
    Layer.succeed(Bindings, bindingsOf(...bindings)),
    RunnerSignals.layer,
    Layer.unwrap(
      Effect.map(Clock.currentTimeMillis, (millis) =>
        Supervision.layer(
          bindings.map((binding) => binding.kind),
          new Date(millis)
        )
      )
    )
  )
  const host = ActorHost.layer(options).pipe(Layer.provideMerge(base))
  return Layer.mergeAll(TimerRunner.layer, JobRunner.layer, MessageRunner.layer, Streams.layer, Inspection.layer).pipe(
    Layer.provideMerge(host)
  )
}
