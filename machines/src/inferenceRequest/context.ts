// What an inference request's machine starts from and remembers: its routes (the requested model,
// then the fallbacks in order, each already judged against the request's workload, media and
// window at acceptance), which route it is on, and the attempts it made. Output text lives on the
// request's row (written by the binding), never in the snapshot.
import { Schema } from "effect"
import { ReplyAddress } from "./events.ts"

/** Why a fallback cannot serve this request, judged at acceptance (null: it can). */
export const SkipReason = Schema.Literals(["workload_mismatch", "unsupported_input_media", "input_over_model_limit"])
export type SkipReason = typeof SkipReason.Type

export const Route = Schema.Struct({ model: Schema.String, skip: Schema.NullOr(SkipReason) })
export type Route = typeof Route.Type

export const ModelChange = Schema.Struct({
  from: Schema.String,
  to: Schema.String,
  reason: Schema.Literals(["model_refused", "provider_error", "provider_overloaded", "rate_limited"]),
  category: Schema.optionalKey(Schema.String)
})
export type ModelChange = typeof ModelChange.Type

/**
 * How the asker's watchers hear that an attempt was sent (a run round's round_started frame): the
 * bus channel, and the members every attempt's frame shares; each attempt adds its number and model.
 */
export const AttemptAnnouncement = Schema.Struct({
  channel: Schema.String,
  frame: Schema.Record(Schema.String, Schema.Unknown)
})
export type AttemptAnnouncement = typeof AttemptAnnouncement.Type

export const InferenceRequestInput = Schema.Struct({
  /** The request's public id (named in its `result` item). */
  publicId: Schema.String,
  /** routes[0] is the requested model. */
  routes: Schema.Array(Route).check(Schema.isMinLength(1)),
  /** From acceptance to timed_out. */
  timeoutMs: Schema.Number,
  /** The actor told the outcome (inference.replied), when another actor asked. */
  replyTo: Schema.optionalKey(Schema.NullOr(ReplyAddress)),
  /** Where each attempt is announced as it is sent, when the asker's watchers want to hear. */
  announce: Schema.optionalKey(Schema.NullOr(AttemptAnnouncement)),
  /**
   * Why the requested model cannot take the sealed input (a conversation's sample whose uploads it
   * does not admit, too large or gone): the request fails at once with this code, no attempt made.
   */
  refusal: Schema.optionalKey(Schema.String)
})
export type InferenceRequestInput = typeof InferenceRequestInput.Type

export const InferenceRequestContext = Schema.Struct({
  publicId: Schema.String,
  routes: Schema.Array(Route),
  timeoutMs: Schema.Number,
  replyTo: Schema.NullOr(ReplyAddress),
  announce: Schema.NullOr(AttemptAnnouncement),
  /** Index of the route the current (or next) attempt uses. */
  route: Schema.Number,
  /** The current (or next) attempt, 1-based across every route. */
  attempt: Schema.Number,
  /** Retryable failures on the current route. */
  routeFailures: Schema.Number,
  /** Retryable failures across the request (the backoff's exponent). */
  retryableFailures: Schema.Number,
  /** Attempts made per model ref. */
  attemptsByModel: Schema.Record(Schema.String, Schema.Number),
  /** The last switch, kept beside a later failure. */
  modelChange: Schema.NullOr(ModelChange),
  /** The input's refusal (see InferenceRequestInput): failed at once, told to the asker as declined. */
  refusal: Schema.optionalKey(Schema.String)
})
export type InferenceRequestContext = typeof InferenceRequestContext.Type
