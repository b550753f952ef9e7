// ExecutorInboxChannel {} (SUPPLEMENT "Cable"): an executor's push channel. The transport
// credential names the address. While subscribed the address is connected: the channel pings
// every 10 s, the executor answers with the action `pong`, and each answer marks it seen;
// three missed pongs close the subscription. Presence reads these marks. Work frames
// (work_available, work_canceled) arrive here once runs dispatch tasks.
import { Executors, type PresenceMark } from "@troupe/domain/executors/Executors"
import { Clock, Duration, Effect, Ref, Stream } from "effect"
import { type CableChannel, registerChannel, rejected } from "./Channels.ts"

export const heartbeat = Duration.seconds(10)
const missedPongsAllowed = 3

export const ExecutorInboxChannel: CableChannel<Executors> = {
  name: "ExecutorInboxChannel",
  subscribe: (_params, connection) =>
    Effect.gen(function* () {
      const identity = connection.identity
      if (identity._tag !== "Executor") return yield* rejected
      const executors = yield* Executors
      const mark = (kind: PresenceMark) => executors.markPresence(identity.executor.id, kind)
      yield* Effect.acquireRelease(mark("connected"), () => mark("disconnected"))
      const lastPong = yield* Ref.make(yield* Clock.currentTimeMillis)
      const pings = Stream.tick(heartbeat).pipe(
        Stream.mapEffect(() =>
          Effect.gen(function* () {
            const silent = (yield* Clock.currentTimeMillis) - (yield* Ref.get(lastPong))
            if (silent > Duration.toMillis(heartbeat) * missedPongsAllowed) {
              yield* connection.disconnect("remote", true)
            }
            return { type: "ping", at: new Date(yield* Clock.currentTimeMillis).toISOString() }
          })
        )
      )
      return {
        messages: pings,
        perform: (data) =>
          data.action === "pong"
            ? Effect.andThen(
                Effect.flatMap(Clock.currentTimeMillis, (at) => Ref.set(lastPong, at)),
                mark("seen")
              )
            : Effect.void
      }
    })
}

export const ExecutorInboxChannelLive = registerChannel(ExecutorInboxChannel)
