// The actor runtime as one layer: bindings, supervision, the host and its runners; alone, or as
// one node of a cluster when given effect/cluster's Sharding (Cluster.ts).
import { Clock, Effect, Layer } from "effect"
import type { Sharding } from "effect/cluster"
import { ActorHost, defaultHostOptions, type HostOptions } from "./ActorHost.ts"
import { type Binding, Bindings, bindingsOf } from "./Binding.ts"
import { actorEntities, clusterPlacement } from "./Cluster.ts"
import { Inspection } from "./Inspection.ts"
import { JobRunner } from "./JobRunner.ts"
import { MessageRunner } from "./MessageRunner.ts"
import { Placement } from "./Placement.ts"
import { RunnerSignals } from "./Signals.ts"
import { Streams } from "./Streams.ts"
import { Supervision } from "./Supervision.ts"
import { TimerRunner } from "./TimerRunner.ts"

export const runtimeLayer = <E = never, R = never>(
  bindings: ReadonlyArray<Binding>,
  options: HostOptions = defaultHostOptions,
  sharding?: Layer.Layer<Sharding.Sharding, E, R>
) => {
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
  const runners = Layer.mergeAll(
    TimerRunner.layer,
    JobRunner.layer,
    MessageRunner.layer,
    Streams.layer,
    Inspection.layer
  )
  if (!sharding) {
    return runners.pipe(
      Layer.provideMerge(ActorHost.layer(options)),
      Layer.provide(Placement.alone),
      Layer.provideMerge(base)
    )
  }
  const host = ActorHost.layer(options).pipe(Layer.provide(clusterPlacement))
  return Layer.mergeAll(runners, actorEntities).pipe(
    Layer.provideMerge(host),
    Layer.provide(sharding),
    Layer.provideMerge(base)
  )
}
