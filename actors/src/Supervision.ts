// Supervisor bookkeeping, one per kind: failures, restarts, quarantines and the live (cached)
// actors of that kind on this node. The host consults it; operators read and reset it.
import { Context, Effect, Layer, Ref } from "effect"

export interface SupervisorState {
  readonly kind: string
  readonly startedAt: Date
  readonly restarts: number
  readonly failures: number
  readonly quarantines: number
  readonly lastFailure: { readonly actorId: string; readonly error: string; readonly at: Date } | undefined
}

export class Supervision extends Context.Service<
  Supervision,
  {
    readonly get: (kind: string) => Effect.Effect<SupervisorState>
    readonly all: Effect.Effect<ReadonlyArray<SupervisorState>>
    readonly recordFailure: (kind: string, actorId: string, error: string, at: Date) => Effect.Effect<void>
    readonly recordQuarantine: (kind: string) => Effect.Effect<void>
    /** A restart: counters of transient failures start over. */
    readonly recordRestart: (kind: string, at: Date) => Effect.Effect<void>
  }
>()("@troupe/actors/Supervision") {
  static readonly layer = (kinds: ReadonlyArray<string>, startedAt: Date) =>
    Layer.effect(
      Supervision,
      Effect.gen(function* () {
        const initial = (kind: string): SupervisorState => ({
          kind,
          startedAt,
          restarts: 0,
          failures: 0,
          quarantines: 0,
          lastFailure: undefined
        })
        const states = yield* Ref.make(new Map(kinds.map((kind) => [kind, initial(kind)])))
        const update = (kind: string, f: (state: SupervisorState) => SupervisorState) =>
          Ref.update(states, (map) => new Map(map).set(kind, f(map.get(kind) ?? initial(kind))))
        return Supervision.of({
          get: (kind) => Effect.map(Ref.get(states), (map) => map.get(kind) ?? initial(kind)),
          all: Effect.map(Ref.get(states), (map) => [...map.values()]),
          recordFailure: (kind, actorId, error, at) =>
            update(kind, (state) => ({ ...state, failures: state.failures + 1, lastFailure: { actorId, error, at } })),
          recordQuarantine: (kind) => update(kind, (state) => ({ ...state, quarantines: state.quarantines + 1 })),
          recordRestart: (kind, at) =>
            update(kind, (state) => ({ ...state, restarts: state.restarts + 1, startedAt: at, failures: 0 }))
        })
      })
    )
}
