// Waiting on actors from HTTP tests: resolves when the actor commits a step into a state (or is
// already there), by listening to the step notices the runtime publishes on the event bus.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Effect, Stream } from "effect"
import type { TestServer } from "./server.ts"

export const waitForActorState = (server: TestServer, kind: string, actorId: string, state: string) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const notices = yield* bus.subscribe(stepChannel)
        if ((yield* Repo.findSnapshot(kind, actorId))?.state_value === state) return
        yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.filter((notice) => notice.kind === kind && notice.actorId === actorId && notice.state === state),
          Stream.take(1),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout("10 seconds"))
  )
