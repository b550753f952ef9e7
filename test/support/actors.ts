// Waiting on actors from HTTP tests: resolves when the actor commits a step into a state (or is
// already there), or when no message told to it is still pending, by listening to the notices
// the runtime publishes on the event bus.
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { type MessageNotice, messageChannel } from "@troupe/actors/MessageRunner"
import { EventBus } from "@troupe/storage/EventBus"
import * as Messages from "@troupe/storage/repositories/ActorMessages"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Effect, Fiber, Stream } from "effect"
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

/** Resolves when every message told to the actor so far was applied or refused. */
export const waitForMessages = (server: TestServer, kind: string, actorId: string) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const notices = yield* bus.subscribe(messageChannel)
        const settled = Effect.map(Messages.pendingMessagesTo(kind, actorId, 1), (rows) => rows.length === 0)
        if (yield* settled) return
        yield* notices.pipe(
          Stream.mapEffect(() => settled),
          Stream.filter((done) => done),
          Stream.take(1),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout("10 seconds"))
  )

/** Runs an effect against a running server or test runtime. */
type Run = <A, E>(effect: Effect.Effect<A, E, any>) => Promise<A>

/**
 * Runs `act`, then resolves with the first notice on `channel` about the actor with `outcome`
 * (job and message runners publish `{actorId, outcome}` notices).
 */
export const afterNotice = <A>(run: Run, channel: string, actorId: string, outcome: string, act: () => Promise<A>) =>
  run(
    Effect.scoped(
      Effect.gen(function* () {
        const bus = yield* EventBus
        const notices = yield* bus.subscribe(channel)
        const waiting = yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as { readonly actorId: string; readonly outcome: string }),
          Stream.filter((notice) => notice.actorId === actorId && notice.outcome === outcome),
          Stream.take(1),
          Stream.runDrain,
          Effect.timeout("10 seconds"),
          Effect.forkScoped
        )
        yield* Effect.promise(act)
        yield* Fiber.join(waiting)
      })
    )
  )

/** Runs `act`, then resolves when a delivery to the actor ends with `outcome`. */
export const afterMessageOutcome = <A>(
  server: TestServer,
  actorId: string,
  outcome: MessageNotice["outcome"],
  act: () => Promise<A>
) => afterNotice(server.run, messageChannel, actorId, outcome, act)
