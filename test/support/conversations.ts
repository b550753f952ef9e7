// Waiting on a conversation from HTTP tests: resolves once `done` holds, checked now and after each
// step the conversation's actor commits (never by sleeping).
import { type StepNotice, stepChannel } from "@troupe/actors/ActorHost"
import { EventBus } from "@troupe/storage/EventBus"
import { Effect, Stream } from "effect"
import type { TestServer } from "./server.ts"

export const waitForConversation = (server: TestServer, conversationId: string, done: () => Promise<boolean>) =>
  server.run(
    Effect.scoped(
      Effect.gen(function* () {
        const notices = yield* (yield* EventBus).subscribe(stepChannel)
        if (yield* Effect.promise(done)) return
        yield* notices.pipe(
          Stream.map((text) => JSON.parse(text) as StepNotice),
          Stream.filter((notice) => notice.kind === "conversation" && notice.actorId === conversationId),
          Stream.mapEffect(() => Effect.promise(done)),
          Stream.takeUntil((finished) => finished),
          Stream.runDrain
        )
      })
    ).pipe(Effect.timeout("20 seconds"))
  )
