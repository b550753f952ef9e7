// AgentAPI::V1::InferenceRequestEventsChannel, or InferenceRequestChannel, {workspace_id,
// inference_request_id, items?, after?} (SUPPLEMENT "Cable"; inference supplement "Event
// items"): one request's durable items as `{event: <item>}`, each equal to its replay item. For
// member credentials only; the request must be in a workspace the caller reads and not be
// tombstoned. `items` is events (default) or lifecycle (run_status and result); `after` absent
// means live items only, a cursor the items after it then live, `""` from item 1. Anything else,
// and every absence, is the one rejection (also one that comes while subscribed, judged at each
// recheck of the socket).
import type { Streams } from "@troupe/actors/Streams"
import {
  InferenceRequestChannelParams,
  inferenceRequestChannelNames
} from "@troupe/contracts/cable/InferenceRequestChannel"
import { InferenceRequests } from "@troupe/domain/inference/InferenceRequests"
import { Effect, Layer, Schema, Stream } from "effect"
import { type CableChannel, registerChannel, rejected, SubscriptionRejected } from "./Channels.ts"
import { openDurableFeed, startingAfter } from "./DurableFeed.ts"
import type { FeedReaders } from "./FeedReaders.ts"

/** The item types that say where a request stands. */
const lifecycleTypes: ReadonlySet<string> = new Set(["run_status", "result"])

const decodeParams = Schema.decodeUnknownEffect(InferenceRequestChannelParams)

const inferenceRequestChannel = (name: string): CableChannel<InferenceRequests | Streams | FeedReaders> => ({
  name,
  subscribe: (params, connection) =>
    Effect.gen(function* () {
      const identity = connection.identity
      if (identity._tag !== "Member") return yield* rejected
      const subscription = yield* Effect.mapError(decodeParams(params), () => new SubscriptionRejected())
      const requests = yield* InferenceRequests
      // Judged again at each recheck: a subscriber that can no longer read the request is rejected.
      const standing = requests
        .eventSource(identity.caller, subscription.workspace_id, subscription.inference_request_id)
        .pipe(Effect.mapError(() => new SubscriptionRejected()))
      const source = yield* standing
      const after = yield* startingAfter(source, subscription.after)
      const items = yield* openDurableFeed(source, after, (item) => item.type === "result")
      const admitted =
        subscription.items === "lifecycle"
          ? Stream.filter(items, (entry) => lifecycleTypes.has(entry.item.type))
          : items
      // `{event: item}` (InferenceRequestChannelMessage), encoded once for every subscription.
      return { messages: Stream.map(admitted, (entry) => entry.event), standing: Effect.asVoid(standing) }
    })
})

const [upstreamName, shortName] = inferenceRequestChannelNames

export const InferenceRequestChannelLive = Layer.mergeAll(
  registerChannel(inferenceRequestChannel(upstreamName)),
  registerChannel(inferenceRequestChannel(shortName))
)
