// AgentAPI::V1::RunEventsChannel, or RunChannel, {workspace_id, run_id, items?, after?} (SUPPLEMENT
// "Cable"; runs supplement "Run feed"), for member credentials that may read the run. `items`:
// - events (default): the run's durable items as `{event: <replay item>}`; lifecycle: turn_status
//   and attention_required only. `after` as on the inference request channel: absent, live items
//   only; a cursor, the items after it then live; `""`, from item 1.
// - progress (ephemeral, never replayed; `after` refused): the frames published for the run from
//   the subscription on, kernel (round_started, step_started, step_claimed) and relayed executor
//   posts (executor_progress, process_output), each as `{frame: <frame>}`.
// Standalone runs only: a hosted run's items ride its conversation's channel, and its own
// subscription is rejected. Anything refused, malformed or invisible is the one rejection, also
// when the subscriber loses sight of the run while subscribed (judged at each recheck).
import type { Streams } from "@troupe/actors/Streams"
import { RunChannelParams, runChannelNames } from "@troupe/contracts/cable/RunChannel"
import { Runs } from "@troupe/domain/runs/Runs"
import { BusRelays } from "@troupe/domain/runtime/BusRelays"
import { Effect, Layer, Schema, Stream } from "effect"
import { type CableChannel, registerChannel, rejected, SubscriptionRejected } from "./Channels.ts"
import { openDurableFeed, startingAfter } from "./DurableFeed.ts"
import type { FeedReaders } from "./FeedReaders.ts"
import { EncodedMessage } from "./Protocol.ts"

/** The item types that say where a run stands. */
const lifecycleTypes: ReadonlySet<string> = new Set(["turn_status", "attention_required"])

const decodeParams = Schema.decodeUnknownEffect(RunChannelParams)

/** A run's feed has no last item: a settled run may still be retried, appended to or resolved. */
const never = () => false

const runChannel = (name: string): CableChannel<Runs | BusRelays | Streams | FeedReaders> => ({
  name,
  subscribe: (params, connection) =>
    Effect.gen(function* () {
      const identity = connection.identity
      if (identity._tag !== "Member") return yield* rejected
      const subscription = yield* Effect.mapError(decodeParams(params), () => new SubscriptionRejected())
      const feed = subscription.items ?? "events"
      if (feed === "progress" && subscription.after !== undefined) return yield* rejected
      const runs = yield* Runs
      // Judged again at each recheck: a subscriber that can no longer read the run is rejected.
      const standing = runs
        .eventSource(identity.caller, subscription.workspace_id, subscription.run_id)
        .pipe(Effect.mapError(() => new SubscriptionRejected()))
      const source = yield* standing
      const after = yield* startingAfter(source, subscription.after)
      const answer = (messages: Stream.Stream<unknown>) => ({ messages, standing: Effect.asVoid(standing) })
      if (feed === "progress") {
        const frames = yield* (yield* BusRelays).runProgress(source.actor.id)
        // The published frame is spliced in as it is.
        return answer(Stream.map(frames, (frame) => new EncodedMessage(`{"frame":${frame}}`)))
      }
      const items = yield* openDurableFeed(source, after, never)
      const admitted =
        feed === "lifecycle" ? Stream.filter(items, (entry) => lifecycleTypes.has(entry.item.type)) : items
      // `{event: item}`, encoded once for every subscription.
      return answer(Stream.map(admitted, (entry) => entry.event))
    })
})

const [upstreamName, shortName] = runChannelNames

export const RunChannelLive = Layer.mergeAll(
  registerChannel(runChannel(upstreamName)),
  registerChannel(runChannel(shortName))
)
