// AgentAPI::V1::ExecutorInboxChannel, or ExecutorInboxChannel, {} (SUPPLEMENT "Cable"; runs
// supplement "Executor inbox"): an executor's push channel. The transport credential names the
// address. While subscribed the address is connected: the channel pings every 10 s, the executor
// answers with the action `pong`, and each answer marks it seen; three missed pongs close the
// subscription. Presence reads these marks. Every message published on the address's inbox
// (work_available, work_canceled) is relayed bare, as published; the inbox read stays the
// authoritative recovery path.
import { executorInboxChannelNames } from "@troupe/contracts/cable/ExecutorInboxChannel"
import { Executors, type PresenceMark } from "@troupe/domain/executors/Executors"
import { BusRelays } from "@troupe/domain/runtime/BusRelays"
import { Clock, Duration, Effect, Layer, Ref, Stream } from "effect"
import { type CableChannel, registerChannel, rejected } from "./Channels.ts"
import { EncodedMessage } from "./Protocol.ts"

export const heartbeat = Duration.seconds(10)
const missedPongsAllowed = 3

const executorInboxChannel = (name: string): CableChannel<Executors | BusRelays> => ({
  name,
  subscribe: (_params, connection) =>
    Effect.gen(function* () {
      const identity = connection.identity
      if (identity._tag !== "Executor") return yield* rejected
      const executors = yield* Executors
      const mark = (presence: PresenceMark) => executors.markPresence(identity.executor.id, presence)
      // The close clears only this subscription's own mark: a newer socket of the address stays online.
      const connectedAt = yield* Effect.acquireRelease(mark({ _tag: "connected" }), (connectedAt) =>
        mark({ _tag: "disconnected", connectedAt })
      )
      // Live before the confirmation: a notice published once it is sent reaches the executor.
      const work = yield* (yield* BusRelays).inbox(identity.executor.publicId)
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
        // The published JSON is the message: spliced in as it is, no `{event}` wrapper.
        messages: Stream.merge(
          pings,
          Stream.map(work, (payload) => new EncodedMessage(payload))
        ),
        perform: (data) =>
          data.action === "pong"
            ? Effect.andThen(
                Effect.flatMap(Clock.currentTimeMillis, (at) => Ref.set(lastPong, at)),
                mark({ _tag: "seen", connectedAt })
              )
            : Effect.void
      }
    })
})

const [upstreamName, shortName] = executorInboxChannelNames

export const ExecutorInboxChannelLive = Layer.mergeAll(
  registerChannel(executorInboxChannel(upstreamName)),
  registerChannel(executorInboxChannel(shortName))
)
