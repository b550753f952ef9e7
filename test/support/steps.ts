// Waiting from HTTP tests: resolves once `done` holds, checked now and after each step an actor
// commits (only the named actor's, when one is named), never by sleeping.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { type Duration, Effect, Stream } from "effect"
import type { TestServer } from "./server.ts"

export interface StepFilter {
  readonly kind?: string
  readonly actorId?: string
  readonly timeout?: Duration.Input
}

export const waitForSteps = (server: TestServer, done: () => Promise<boolean>, filter: StepFilter = {}) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const notices = yield* (yield* EventBus).subscribe(stepChannel)
        if (yield* Effect.promise(done)) return
        yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.filter(
            (notice) =>
              (filter.kind === undefined || notice.kind === filter.kind) &&
              (filter.actorId === undefined || notice.actorId === filter.actorId)
          ),
          Stream.mapEffect(() => Effect.promise(done)),
          Stream.takeUntil((finished) => finished),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout(filter.timeout ?? "20 seconds"))
  )
