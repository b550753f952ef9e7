// The beginning of a stop, as a signal the long-lived answers watch: cable sockets and event
// streams never end by themselves, so they end when it is raised instead of holding the HTTP
// server's close until its grace runs out (the grace is for ordinary requests in flight).
import { Context, Deferred, Effect, Layer } from "effect"

export class Stopping extends Context.Service<
  Stopping,
  {
    /** Completes once the stop has begun (at once if it already has). */
    readonly begun: Effect.Effect<void>
    readonly begin: Effect.Effect<void>
  }
>()("@troupe/http/Stopping") {
  static readonly layer = Layer.effect(
    Stopping,
    Effect.map(Deferred.make<void>(), (begun) =>
      Stopping.of({ begun: Deferred.await(begun), begin: Effect.asVoid(Deferred.succeed(begun, undefined)) })
    )
  )

  /**
   * Raises the signal when it is finalized. Layers built later are finalized earlier: built after
   * the HTTP server's routes, it runs before the server's own close.
   */
  static readonly beginFirst = Layer.effectDiscard(
    Effect.gen(function* () {
      const stopping = yield* Stopping
      yield* Effect.addFinalizer(() => stopping.begin)
    })
  )
}
