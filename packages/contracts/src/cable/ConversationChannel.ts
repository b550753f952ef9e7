// The conversation channel's wire shapes (SUPPLEMENT "Cable"; conversations supplement "Feed and
// conversation channel"): the params of a subscription's identifier and the transcript's items.
// Durable items travel as `{event: <replay item>}`, transcript items as `{event: <transcript item>}`.
import { Schema } from "effect"
import { StreamItem } from "../member/InferenceRequests.ts"
import { TranscriptCall, TranscriptRound } from "../member/RunShapes.ts"

/** The identifiers the channel answers to: the upstream client's, then our short one. */
export const conversationChannelNames = ["AgentAPI::V1::ConversationEventsChannel", "ConversationChannel"] as const

/**
 * `items` picks the feed (events by default); `after` is a replay cursor of the durable feeds, `""`
 * meaning from item 1, absent meaning live items only (with transcript or progress it is refused).
 * Other members of the identifier are ignored.
 */
export const ConversationChannelParams = Schema.Struct({
  workspace_id: Schema.String,
  conversation_id: Schema.String,
  items: Schema.optionalKey(Schema.Literals(["events", "lifecycle", "transcript", "progress"])),
  after: Schema.optionalKey(Schema.String)
})
export type ConversationChannelParams = typeof ConversationChannelParams.Type

/** Where a run-backed reply's item comes from: its run and the round (or call) task. */
const roundKeys = {
  run_public_id: Schema.optionalKey(Schema.String),
  task_key: Schema.optionalKey(Schema.String)
}

const ids = { turn_public_id: Schema.String, variant_public_id: Schema.String, ...roundKeys }

const delta = (type: "text_delta" | "reasoning_delta") =>
  Schema.Struct({ type: Schema.Literal(type), ...ids, text: Schema.String })

/** A settled task of a run-backed reply, as the run's transcript door shows it. */
const settledTask = <T extends "round" | "call", S extends Schema.Top>(type: T, row: S) =>
  Schema.Struct({
    type: Schema.Literal(type),
    turn_public_id: Schema.String,
    variant_public_id: Schema.String,
    run_public_id: Schema.String,
    task_key: Schema.String,
    [type]: row
  } as const)

/**
 * Ephemeral items of the transcript feed (never replayed). A run-backed reply's deltas add the run
 * and the round they come from.
 */
export const TranscriptItem = Schema.Union([
  delta("text_delta"),
  delta("reasoning_delta"),
  /** The model began a tool call (its arguments follow as deltas). */
  Schema.Struct({
    type: Schema.Literal("tool_call_started"),
    ...ids,
    index: Schema.Number,
    call_id: Schema.String,
    name: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("tool_call_arguments_delta"),
    ...ids,
    index: Schema.Number,
    delta: Schema.String
  }),
  /** The attempt's output so far is dropped: the text of that variant starts again. */
  Schema.Struct({ type: Schema.Literal("stream_reset"), ...ids }),
  /** A turn settled: its projection, as the turns door answers it. */
  Schema.Struct({
    type: Schema.Literal("turn"),
    turn_public_id: Schema.String,
    turn: Schema.Record(Schema.String, Schema.Unknown)
  }),
  settledTask("round", TranscriptRound),
  settledTask("call", TranscriptCall)
])
export type TranscriptItem = typeof TranscriptItem.Type

export const ConversationChannelMessage = Schema.Struct({ event: Schema.Union([StreamItem, TranscriptItem]) })
export type ConversationChannelMessage = typeof ConversationChannelMessage.Type
