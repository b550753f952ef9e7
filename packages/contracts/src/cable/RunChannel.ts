// The run channel's wire shapes (SUPPLEMENT "Cable"; runs supplement "Executor inbox" and "Run
// feed"): the params of a subscription's identifier and its messages, durable items as
// `{event: <replay item>}` and progress frames as `{frame: <frame>}`.
import { Schema } from "effect"
import { StreamItem } from "../member/InferenceRequests.ts"

/** The identifiers the channel answers to: the upstream client's, then our short one. */
export const runChannelNames = ["AgentAPI::V1::RunEventsChannel", "RunChannel"] as const

/**
 * `items` picks the feed (events by default; lifecycle is turn_status and attention_required;
 * progress the ephemeral frames); `after` is a replay cursor of the durable feeds, `""` meaning from
 * item 1, absent meaning live items only (with progress it is refused). Other members of the
 * identifier are ignored.
 */
export const RunChannelParams = Schema.Struct({
  workspace_id: Schema.String,
  run_id: Schema.String,
  items: Schema.optionalKey(Schema.Literals(["events", "lifecycle", "progress"])),
  after: Schema.optionalKey(Schema.String)
})
export type RunChannelParams = typeof RunChannelParams.Type

/**
 * A progress frame: the kernel's round_started, step_started and step_claimed, and the relayed
 * executor posts executor_progress and process_output (runs supplement "Executor inbox").
 */
export const ProgressFrame = Schema.Record(Schema.String, Schema.Unknown)

/** Every message of the channel: one durable item (events, lifecycle) or one frame (progress). */
export const RunChannelMessage = Schema.Union([
  Schema.Struct({ event: StreamItem }),
  Schema.Struct({ frame: ProgressFrame })
])
export type RunChannelMessage = typeof RunChannelMessage.Type
