// What a conversation's machine starts from and remembers: its fences (lock_version,
// context_revision), the unconsumed inputs of its queue in read order (what the drain needs to
// judge them: never their text), the reply lane (the one turn pending or running, if any) and the
// tail (its newest own turn). Turns, variants and input texts live on rows its binding writes.
import { Schema } from "effect"

/** Ids minted at acceptance for what an input may become (a machine never makes ids). */
export const MintedIds = Schema.Struct({
  turnId: Schema.String,
  variantId: Schema.String,
  requestId: Schema.String,
  /** The fallback candidate's, used when the first sample is declined. */
  fallbackVariantId: Schema.String,
  fallbackRequestId: Schema.String
})
export type MintedIds = typeof MintedIds.Type

/** How a direct reply will be asked, judged against the catalog at acceptance (and at each edit). */
export const ReplyPlan = Schema.Struct({
  /** The resolved model ref; null when none could be chosen. */
  model: Schema.NullOr(Schema.String),
  /** The model is in the catalog and serves text generation. */
  modelKnown: Schema.Boolean,
  /** The fallback asked once when the first sample is declined (null: none). */
  fallbackModel: Schema.NullOr(Schema.String),
  /** The answering agent's user public id. */
  answererId: Schema.String,
  /** How the reply is made (spec "Engine selection"): one model call, or a hosted run (absent: direct). */
  engine: Schema.optionalKey(Schema.Literals(["direct", "run"]))
})
export type ReplyPlan = typeof ReplyPlan.Type

export const DeliveryMode = Schema.Literals(["queue", "steer", "steer_now"])
export type DeliveryMode = typeof DeliveryMode.Type

export const BlockedReason = Schema.Literals([
  "unknown_model",
  "estimated_input_exceeds_model_limit",
  "author_not_authorized",
  "approval_mode_required",
  "compaction_unavailable_under_raw",
  "invalid_steps",
  "budget_exhausted"
])
export type BlockedReason = typeof BlockedReason.Type

export const QueueEntry = Schema.Struct({
  inputId: Schema.String,
  kind: Schema.Literals(["message", "direct_reply"]),
  /**
   * A returned result (origin task_result): read first, immutable to people, outside the bound; one
   * that cannot be served lands as a message.
   */
  kernel: Schema.Boolean,
  /**
   * A child conversation's first input (origin child): a kernel row too (read first, outside the
   * bound, never the people's to reorder), but one that cannot be served blocks, and its kernel
   * (a schedule's cancel) may delete it. Absent: false.
   */
  child: Schema.optionalKey(Schema.Boolean),
  role: Schema.String,
  state: Schema.Literals(["pending", "steering", "blocked"]),
  blockedReason: Schema.NullOr(BlockedReason),
  deliveryMode: DeliveryMode,
  /** Epoch milliseconds before which it never heads; null: due at once. */
  dueAt: Schema.NullOr(Schema.Number),
  queuePosition: Schema.Number,
  lockVersion: Schema.Number,
  authorId: Schema.String,
  reply: Schema.NullOr(ReplyPlan),
  ids: MintedIds
})
export type QueueEntry = typeof QueueEntry.Type

export const CompactionTrigger = Schema.Literals(["manual", "wall"])
export type CompactionTrigger = typeof CompactionTrigger.Type

/** The reply being made: a first sample, a fallback, a regeneration or a compaction summary. */
export const Lane = Schema.Struct({
  phase: Schema.Literals(["judging", "running"]),
  kind: Schema.Literals(["reply", "fallback", "regeneration", "summary"]),
  turnId: Schema.String,
  variantId: Schema.String,
  requestId: Schema.String,
  inputId: Schema.NullOr(Schema.String),
  model: Schema.String,
  /** The fallback still available to this turn's first sample (null: none, or spent). */
  fallback: Schema.NullOr(Schema.Struct({ model: Schema.String, variantId: Schema.String, requestId: Schema.String })),
  /** A regeneration's: the candidate that stays active until the new one completes. */
  displayedVariantId: Schema.NullOr(Schema.String),
  /**
   * A regeneration's: what the turn showed before it (its status, the displayed candidate's status
   * and the turn's failure), to which it returns when the new sample fails or is canceled.
   */
  prior: Schema.NullOr(
    Schema.Struct({
      status: Schema.String,
      variantStatus: Schema.String,
      failureReasonKey: Schema.NullOr(Schema.String)
    })
  ),
  canceled: Schema.Boolean,
  /** A reply made by a hosted run (its public id is `requestId`); absent: an inference request. */
  engine: Schema.optionalKey(Schema.Literals(["direct", "run"])),
  /** A summary's: what asked for the compaction (the door, or a head over the window). */
  trigger: Schema.optionalKey(CompactionTrigger)
})
export type Lane = typeof Lane.Type

export const Tail = Schema.Struct({
  turnId: Schema.String,
  position: Schema.Number,
  kind: Schema.Literals(["message", "direct_reply", "compaction_summary"]),
  status: Schema.String
})
export type Tail = typeof Tail.Type

export const ConversationInput = Schema.Struct({
  publicId: Schema.String,
  /** Positions below this one are inherited from the source (a fork's prefix); 1 otherwise. */
  firstPosition: Schema.Number,
  /** A side: never archived or forked. */
  side: Schema.Boolean,
  /** A subagent child: follows its parent's archival. */
  subagent: Schema.Boolean,
  /** A fork's own copy of its fork turn, already on the row. */
  tail: Schema.NullOr(Tail)
})
export type ConversationInput = typeof ConversationInput.Type

export const ConversationContext = Schema.Struct({
  publicId: Schema.String,
  side: Schema.Boolean,
  subagent: Schema.Boolean,
  lockVersion: Schema.Number,
  contextRevision: Schema.Number,
  nextPosition: Schema.Number,
  nextQueuePosition: Schema.Number,
  queue: Schema.Array(QueueEntry),
  lane: Schema.NullOr(Lane),
  tail: Schema.NullOr(Tail),
  lastReplyModel: Schema.NullOr(Schema.String),
  /**
   * Positions up to this one are frozen whoever lives: below a fork's own first position (its
   * source's), and the freezes a version-1 snapshot recorded without naming their child.
   */
  frozenThrough: Schema.Number,
  /** Each live child (fork or side) by public id: the positions it reads by reference. */
  freezes: Schema.Record(Schema.String, Schema.Number),
  /** The newest run-backed reply: a run held for attention that runs again runs its turn again. */
  hostedRun: Schema.optionalKey(
    Schema.NullOr(
      Schema.Struct({ runId: Schema.String, turnId: Schema.String, variantId: Schema.String, model: Schema.String })
    )
  )
})
export type ConversationContext = typeof ConversationContext.Type
