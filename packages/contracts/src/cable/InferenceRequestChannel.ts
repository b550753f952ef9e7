// The inference request channel's wire shapes (SUPPLEMENT "Cable"; inference supplement "Event
// items"): the params of a subscription's identifier, and its messages, each one replay item.
import { Schema } from "effect"
import { StreamItem } from "../member/InferenceRequests.ts"

/** The identifiers the channel answers to: the upstream client's, then our short one. */
export const inferenceRequestChannelNames = [
  "AgentAPI::V1::InferenceRequestEventsChannel",
  "InferenceRequestChannel"
] as const

/**
 * `items` picks the feed (events by default; lifecycle is run_status and result only); `after` is
 * a replay cursor, `""` meaning from item 1, absent meaning live items only. Other members of the
 * identifier (its `channel`, anything a client adds) are ignored.
 */
export const InferenceRequestChannelParams = Schema.Struct({
  workspace_id: Schema.String,
  inference_request_id: Schema.String,
  items: Schema.optionalKey(Schema.Literals(["events", "lifecycle"])),
  after: Schema.optionalKey(Schema.String)
})
export type InferenceRequestChannelParams = typeof InferenceRequestChannelParams.Type

/** Every message of the channel: one durable item, equal to its replay item. */
export const InferenceRequestChannelMessage = Schema.Struct({ event: StreamItem })
export type InferenceRequestChannelMessage = typeof InferenceRequestChannelMessage.Type
