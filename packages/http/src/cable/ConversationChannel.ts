// AgentAPI::V1::ConversationEventsChannel, or ConversationChannel, {workspace_id, conversation_id,
// items?, after?} (SUPPLEMENT "Cable"; conversations supplement "Feed and conversation channel"),
// for member credentials and browser sessions of humans who may read the conversation. `items`:
// - events (default): every durable item as `{event: <replay item>}`; lifecycle: turn_status,
//   attention_required and conversation_ended only. `after` as on the inference request channel.
// - transcript (ephemeral, never replayed): a streaming reply's text_delta / reasoning_delta and
//   tool_call_started / tool_call_arguments_delta, stream_reset when an attempt's output is
//   dropped, `turn` with its projection when a turn settles, and a run-backed reply's `round` and
//   `call` rows (the run's transcript door's) as its mainline rounds and their calls settle. A
//   direct reply's deltas ride its inference request's stream, a run-backed reply's those of each
//   mainline round's request (naming the run and the round), followed from the request's first
//   item (so a reply already running when the subscription starts arrives whole) until its result;
//   the conversation's items wait meanwhile, so a turn's `turn` follows its last delta.
// - progress: the frames of the conversation's hosted runs (run-backed replies), as published.
// Anything refused, malformed or invisible is the one rejection, also when the subscriber loses
// sight of the conversation while subscribed (judged at each recheck of the socket).
import { type StreamItem, Streams } from "@troupe/actors/Streams"
import {
  type ConversationChannelMessage,
  ConversationChannelParams,
  conversationChannelNames,
  TranscriptItem
} from "@troupe/contracts/cable/ConversationChannel"
import type { Caller } from "@troupe/domain/accounts/Caller"
import { Conversations } from "@troupe/domain/conversations/Conversations"
import { LiveReplies, type LiveReply } from "@troupe/domain/conversations/LiveReplies"
import { Turns } from "@troupe/domain/conversations/Turns"
import { Runs } from "@troupe/domain/runs/Runs"
import { settledRowOf, settlesTask } from "@troupe/domain/runs/Transcript"
import { BusRelays } from "@troupe/domain/runtime/BusRelays"
import { Effect, Layer, Schema, Stream } from "effect"
import { type CableChannel, type CableIdentity, registerChannel, rejected, SubscriptionRejected } from "./Channels.ts"
import { openDurableFeed, startingAfter } from "./DurableFeed.ts"
import { FeedReaders, type FeedSource } from "./FeedReaders.ts"
import { EncodedMessage } from "./Protocol.ts"

const lifecycleTypes: ReadonlySet<string> = new Set(["turn_status", "attention_required", "conversation_ended"])
const settled: ReadonlySet<unknown> = new Set(["completed", "failed", "canceled", "timed_out"])

const decodeParams = Schema.decodeUnknownEffect(ConversationChannelParams)

type Payload = Readonly<Record<string, unknown>>
const payloadOf = (item: StreamItem): Payload => (item.payload ?? {}) as Payload

/** Nothing follows a tombstone's conversation_ended; an archive's may be followed by an unarchive. */
const isLast = (item: StreamItem) => item.type === "conversation_ended" && payloadOf(item).reason === "tombstoned"

/** A member credential, or a human's browser session cookie (the conversation page). */
const callerOf = (identity: CableIdentity) => {
  if (identity._tag === "Member") return Effect.succeed(identity.caller)
  const credential = identity._tag === "Human" ? identity.caller.credential : undefined
  if (identity._tag !== "Human" || credential?.kind !== "session" || credential.sessionKind !== "browser") {
    return rejected
  }
  return Effect.flatMap(LiveReplies, (live) => live.humanCaller(identity.caller.user.id)).pipe(
    Effect.flatMap((caller) => (caller === undefined ? rejected : Effect.succeed(caller)))
  )
}

/** One item of a reply's inference request as the transcript tells it (most tell nothing). */
const transcribed = (reply: LiveReply, item: StreamItem): TranscriptItem | undefined => {
  const ids = {
    turn_public_id: reply.turnPublicId,
    variant_public_id: reply.variantPublicId,
    ...(reply.round === undefined ? {} : { run_public_id: reply.round.runPublicId, task_key: reply.round.taskKey })
  }
  const payload = payloadOf(item)
  const call = (payload.item ?? {}) as Payload
  switch (item.type) {
    case "text_delta":
    case "reasoning_delta":
      return typeof payload.text === "string" ? { type: item.type, ...ids, text: payload.text } : undefined
    case "provider_output_item_started":
      return typeof payload.index === "number" && typeof call.call_id === "string" && typeof call.name === "string"
        ? { type: "tool_call_started", ...ids, index: payload.index, call_id: call.call_id, name: call.name }
        : undefined
    case "provider_output_item_delta":
      return typeof payload.index === "number" && typeof payload.delta === "string"
        ? { type: "tool_call_arguments_delta", ...ids, index: payload.index, delta: payload.delta }
        : undefined
    case "rollback":
      return { type: "stream_reset", ...ids }
    default:
      return undefined
  }
}

const encodeItem = Schema.encodeSync(TranscriptItem)

/**
 * The conversation's transcript for `caller`: its `turn` items read as the turns door answers; a
 * reply's deltas encoded once for every subscription following it.
 */
const transcript = Effect.fnUntraced(function* (
  caller: Caller,
  subscription: ConversationChannelParams,
  source: FeedSource
) {
  const live = yield* LiveReplies
  const turns = yield* Turns
  const runs = yield* Runs
  const streams = yield* Streams
  const readers = yield* FeedReaders
  const { workspace_id: workspaceId, conversation_id: conversationId } = subscription
  // The conversation's items from now on, opened before the running sample is read: a sample that
  // starts later is announced there, one that started earlier is found by the read (or both).
  const items = yield* openDurableFeed(source, "live", isLast)
  const followed = new Set<string>()
  const follow = (reply: LiveReply | undefined) => {
    if (reply === undefined || followed.has(reply.source.stream)) return Stream.empty
    followed.add(reply.source.stream)
    const deltas = openDurableFeed(reply.source, 0n, (item) => item.type === "result").pipe(
      Effect.provideService(Streams, streams),
      Effect.provideService(FeedReaders, readers)
    )
    const key = `transcript ${reply.variantPublicId} ${reply.round?.taskKey ?? ""}`
    return Stream.unwrap(deltas).pipe(
      Stream.map((entry) =>
        entry.message(key, (item) => {
          const event = transcribed(reply, item)
          return event === undefined ? undefined : ({ event } satisfies ConversationChannelMessage)
        })
      ),
      Stream.filter((message) => message !== undefined)
    )
  }
  const settledTurn = (turnId: string) =>
    turns.show(caller, workspaceId, conversationId, turnId, true).pipe(
      Effect.map(
        (turn): ReadonlyArray<ConversationChannelMessage> => [{ event: { type: "turn", turn_public_id: turnId, turn } }]
      ),
      Effect.catch(() => Effect.succeed([]))
    )
  /** A run-backed reply's settled round or call, as the run's transcript door shows it. */
  const settledRow = (runId: string, taskKey: string) =>
    Effect.gen(function* () {
      const reply = yield* live.runReply(runId)
      if (reply === undefined) return []
      const state = yield* runs.read(caller, workspaceId, runId)
      const row = settledRowOf(state.tasks, state.specs, taskKey)
      if (row === undefined) return []
      const ids = {
        turn_public_id: reply.turnPublicId,
        variant_public_id: reply.variantPublicId,
        run_public_id: runId,
        task_key: taskKey
      }
      // Encoded here: the row's stamps are instants, the wire's ISO strings.
      const event = encodeItem({ ...ids, ...row })
      return [new EncodedMessage(JSON.stringify({ event }))]
    }).pipe(Effect.catch(() => Effect.succeed([])))
  const told = (item: StreamItem): Stream.Stream<EncodedMessage | ConversationChannelMessage> => {
    const payload = payloadOf(item)
    const variantId = payload.variant_public_id
    const turnId = payload.turn_public_id
    const starts = item.type === "turn_status" || item.type === "turn_variant"
    if (starts && payload.status === "running" && typeof variantId === "string") {
      return Stream.unwrap(Effect.map(live.sample(variantId), follow))
    }
    const { run_public_id: runId, task_key: taskKey } = payload
    if (item.type === "task_status" && typeof runId === "string" && typeof taskKey === "string") {
      if (payload.kind === "model_task" && payload.status === "running") {
        return Stream.unwrap(Effect.map(live.round(runId, taskKey), follow))
      }
      const roundOrCall = payload.kind === "model_task" || payload.kind === "tool_task"
      if (roundOrCall && settlesTask(payload.status)) return Stream.fromIterableEffect(settledRow(runId, taskKey))
    }
    if (item.type === "turn_status" && settled.has(payload.status) && typeof turnId === "string") {
      return Stream.fromIterableEffect(settledTurn(turnId))
    }
    return Stream.empty
  }
  const current = yield* live.running(conversationId)
  return Stream.concat(
    follow(current),
    Stream.flatMap(items, (entry) => told(entry.item))
  )
})

const conversationChannel = (
  name: string
): CableChannel<Conversations | LiveReplies | Turns | Runs | Streams | FeedReaders | BusRelays> => ({
  name,
  subscribe: (params, connection) =>
    Effect.gen(function* () {
      const caller = yield* callerOf(connection.identity)
      const subscription = yield* Effect.mapError(decodeParams(params), () => new SubscriptionRejected())
      const feed = subscription.items ?? "events"
      if (subscription.after !== undefined && (feed === "transcript" || feed === "progress")) return yield* rejected
      const conversations = yield* Conversations
      // Judged again at each recheck: a subscriber that can no longer see it is rejected.
      const standing = conversations
        .eventSource(caller, subscription.workspace_id, subscription.conversation_id)
        .pipe(Effect.mapError(() => new SubscriptionRejected()))
      const source = yield* standing
      const after = yield* startingAfter(source, subscription.after)
      const answer = (messages: Stream.Stream<unknown>) => ({ messages, standing: Effect.asVoid(standing) })
      if (feed === "progress") {
        const frames = yield* (yield* BusRelays).conversationProgress(source.actor.id)
        // The published frame is spliced in as it is.
        return answer(Stream.map(frames, (frame) => new EncodedMessage(`{"frame":${frame}}`)))
      }
      if (feed === "transcript") return answer(yield* transcript(caller, subscription, source))
      const items = yield* openDurableFeed(source, after, isLast)
      const admitted =
        feed === "lifecycle" ? Stream.filter(items, (entry) => lifecycleTypes.has(entry.item.type)) : items
      // `{event: item}`, encoded once for every subscription.
      return answer(Stream.map(admitted, (entry) => entry.event))
    })
})

const [upstreamName, shortName] = conversationChannelNames

export const ConversationChannelLive = Layer.mergeAll(
  registerChannel(conversationChannel(upstreamName)),
  registerChannel(conversationChannel(shortName))
)
