// The conversation channel's wire shapes (SUPPLEMENT "Cable"; conversations supplement "Feed and
// conversation channel"): the params of a subscription's identifier and the transcript's items.
// Durable items travel as `{event: <replay item>}`, transcript items as `{event: <transcript item>}`.
import { Schema } from "effect"
import { StreamItem } from "../member/InferenceRequests.ts"

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

const delta = (type: "text_delta" | "reasoning_delta") =>
  Schema.Struct({
    type: Schema.Literal(type),
    turn_public_id: Schema.String,
    variant_public_id: Schema.String,
    text: Schema.String
  })

/** Ephemeral items of the transcript feed (never replayed). */
export const TranscriptItem = Schema.Union([
  delta("text_delta"),
  delta("reasoning_delta"),
  /** The attempt's output so far is dropped: the text of that variant starts again. */
  Schema.Struct({
    type: Schema.Literal("stream_reset"),
    turn_public_id: Schema.String,
    variant_public_id: Schema.String
  }),
  /** A turn settled: its projection, as the turns door answers it. */
  Schema.Struct({
    type: Schema.Literal("turn"),
    turn_public_id: Schema.String,
    turn: Schema.Record(Schema.String, Schema.Unknown)
  })
])
export type TranscriptItem = typeof TranscriptItem.Type

export const ConversationChannelMessage = Schema.Struct({ event: Schema.Union([StreamItem, TranscriptItem]) })
export type ConversationChannelMessage = typeof ConversationChannelMessage.Type
