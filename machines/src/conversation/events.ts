// Events of a conversation: its commands (each judged by the domain for standing and shape first,
// then by the machine against the conversation's state), the timers of its scheduled inputs and
// reap, the judging job's verdict, and the reply told by an inference request it asked.
import { Schema } from "effect"
import { InferenceReplied } from "../inferenceRequest/events.ts"
import { InputLanded, RunReplied } from "../run/events.ts"
import { BlockedReason, CompactionTrigger, MintedIds, ReplyPlan, Tail } from "./context.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** Fields of the conversation row a command replaces (PATCH, access, default runner, memory_context). */
export const ConversationChanges = Schema.Struct({
  title: Schema.optionalKey(Schema.NullOr(Schema.String)),
  metadata: Schema.optionalKey(JsonObject),
  access: Schema.optionalKey(JsonObject),
  default_runner_executor_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  memory_context: Schema.optionalKey(Schema.NullOr(JsonObject))
})
export type ConversationChanges = typeof ConversationChanges.Type

/** An input as accepted: what the queue entry remembers and the row the binding inserts. */
export const AcceptedInput = Schema.Struct({
  inputId: Schema.String,
  kind: Schema.Literals(["message", "direct_reply"]),
  kernel: Schema.Boolean,
  role: Schema.String,
  deliveryMode: Schema.Literals(["queue", "steer", "steer_now"]),
  dueAt: Schema.NullOr(Schema.Number),
  authorId: Schema.String,
  reply: Schema.NullOr(ReplyPlan),
  ids: MintedIds,
  /** The row's stored members (text, model, history, attachments, speaker, ...), as the binding writes them. */
  row: JsonObject,
  /** The input_accepted item's payload, but for queue_position and state (the machine's). */
  item: JsonObject
})
export type AcceptedInput = typeof AcceptedInput.Type

export const TurnVisibility = Schema.Literals(["visible", "hidden", "excluded_from_context"])

export const ConversationEvent = Schema.Union([
  /** PATCH (title, metadata) with the presented lock_version. */
  Schema.Struct({
    type: Schema.Literal("conversation.edit"),
    lockVersion: Schema.Number,
    changes: ConversationChanges
  }),
  /** Access, default runner or memory_context replaced (no lock_version presented); `item` is narrated. */
  Schema.Struct({
    type: Schema.Literal("conversation.configure"),
    changes: ConversationChanges,
    item: Schema.NullOr(JsonObject)
  }),
  /** A conversation-scope memory write (the next reply's material changed). */
  Schema.Struct({ type: Schema.Literal("conversation.memoryWritten") }),
  Schema.Struct({ type: Schema.Literal("conversation.archive") }),
  Schema.Struct({ type: Schema.Literal("conversation.unarchive") }),
  /** DELETE; refused while a reply is pending or running. */
  Schema.Struct({ type: Schema.Literal("conversation.tombstone") }),
  /**
   * Conversation-level cancellation of the running reply; with `turnId` (a message told after
   * the sender looked), only while that turn's sample still runs.
   */
  Schema.Struct({ type: Schema.Literal("conversation.cancel"), turnId: Schema.optionalKey(Schema.String) }),
  /**
   * A live child (a fork or side, `child` its public id) reads positions up to `through` by
   * reference: frozen until it is told released (without `child`: frozen for good).
   */
  Schema.Struct({
    type: Schema.Literal("conversation.freeze"),
    through: Schema.Number,
    child: Schema.optionalKey(Schema.String)
  }),
  /** A fork or side was made of it: `conversation.freeze` through `through`, `item` narrated (fork_created). */
  Schema.Struct({
    type: Schema.Literal("conversation.forked"),
    through: Schema.Number,
    item: JsonObject,
    child: Schema.optionalKey(Schema.String)
  }),
  /** A child it froze for is tombstoned: its freeze is lifted. */
  Schema.Struct({ type: Schema.Literal("conversation.release"), child: Schema.String }),
  /**
   * Told by its source (a side: the source was archived or deleted) or its parent (a subagent:
   * the parent was deleted): its work is canceled and it is tombstoned.
   */
  Schema.Struct({ type: Schema.Literal("conversation.end") }),
  /** Told a subagent child by its parent: it follows the parent's archive or unarchive. */
  Schema.Struct({ type: Schema.Literal("conversation.follow"), state: Schema.Literals(["archived", "active"]) }),
  /** A principal that speaks or answers here was renamed: `item` is narrated (handle_changed). */
  Schema.Struct({
    type: Schema.Literal("principal.renamed"),
    item: Schema.Struct({ user_public_id: Schema.String, old: Schema.String, new: Schema.String })
  }),
  /** Timers: a scheduled input came due; the tombstone's reap. */
  Schema.Struct({ type: Schema.Literal("input.due"), inputId: Schema.String }),
  Schema.Struct({ type: Schema.Literal("conversation.reap") }),
  Schema.Struct({
    type: Schema.Literal("input.accept"),
    at: Schema.Number,
    input: AcceptedInput,
    expectedContextRevision: Schema.optionalKey(Schema.Number),
    expectedTailTurnId: Schema.optionalKey(Schema.String),
    /** A steer's guard: the run of the run-backed reply it is held against. */
    expectedSteeringRunId: Schema.optionalKey(Schema.String)
  }),
  Schema.Struct({
    type: Schema.Literal("input.edit"),
    at: Schema.Number,
    inputId: Schema.String,
    expectedLockVersion: Schema.optionalKey(Schema.Number),
    /** The row's changed members. */
    changes: JsonObject,
    /** The re-judged plan of a direct reply. */
    reply: Schema.optionalKey(Schema.NullOr(ReplyPlan)),
    /** A new delivery time (null: due now); absent keeps it. */
    dueAt: Schema.optionalKey(Schema.NullOr(Schema.Number))
  }),
  /** A held steer's only edit: delivery_mode steer_now. */
  Schema.Struct({
    type: Schema.Literal("input.promote"),
    inputId: Schema.String,
    expectedLockVersion: Schema.optionalKey(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("input.delete"), inputId: Schema.String }),
  /** Reorder by `authorId`: `inputIds` must be exactly its unconsumed non-kernel rows. */
  Schema.Struct({
    type: Schema.Literal("input.reorder"),
    authorId: Schema.String,
    inputIds: Schema.Array(Schema.String)
  }),
  /**
   * The judging job's verdict on a direct reply's head at `revision`, as the head read at
   * `lockVersion` (absent: judged before verdicts named it; asked again).
   */
  Schema.Struct({
    type: Schema.Literal("reply.judged"),
    inputId: Schema.String,
    revision: Schema.Number,
    lockVersion: Schema.optionalKey(Schema.Number),
    verdict: Schema.Union([Schema.Literal("ready"), BlockedReason]),
    /** A run-backed reply's compiled plan (opaque here: the run's rows and actor are made from it). */
    plan: Schema.optionalKey(Schema.Unknown)
  }),
  /**
   * A compaction: a summary turn (ids minted) asked of `model`. manual: the door's (refused while
   * anything runs); wall: the judging job's for the head `inputId` at `revision`, summarized first.
   */
  Schema.Struct({
    type: Schema.Literal("conversation.compact"),
    trigger: CompactionTrigger,
    turnId: Schema.String,
    variantId: Schema.String,
    requestId: Schema.String,
    model: Schema.String,
    inputId: Schema.optionalKey(Schema.String),
    revision: Schema.optionalKey(Schema.Number),
    lockVersion: Schema.optionalKey(Schema.Number)
  }),
  InferenceReplied,
  RunReplied,
  InputLanded,
  Schema.Struct({
    type: Schema.Literal("turn.edit"),
    turnId: Schema.String,
    variantId: Schema.String,
    text: Schema.String
  }),
  Schema.Struct({
    type: Schema.Literal("turn.regenerate"),
    turnId: Schema.String,
    /** The candidate shown now (it keeps rendering until the new one completes). */
    displayedVariantId: Schema.String,
    /** The candidate whose sealed request is asked again when the shown one has none (an edit); absent: the shown one. */
    sealedVariantId: Schema.optionalKey(Schema.String),
    variantId: Schema.String,
    requestId: Schema.String,
    model: Schema.String,
    /** The request members a regeneration overrides (model, configuration, ...). */
    overrides: JsonObject,
    /** The displayed candidate's status and the turn's failure (what a failed regeneration returns to). */
    displayedStatus: Schema.optionalKey(Schema.String),
    failureReasonKey: Schema.optionalKey(Schema.NullOr(Schema.String)),
    /** A run-backed reply asked again: a new hosted run (its public id `requestId`) from `plan`; absent: direct. */
    engine: Schema.optionalKey(Schema.Literals(["direct", "run"])),
    /** The new run's compiled plan (opaque here, as a judged head's). */
    plan: Schema.optionalKey(Schema.Unknown)
  }),
  Schema.Struct({
    type: Schema.Literal("turn.activate"),
    turnId: Schema.String,
    variantId: Schema.String,
    /** The candidate activated: the turn takes its status and failure. */
    variant: Schema.optionalKey(
      Schema.Struct({ source: Schema.String, status: Schema.String, failureReasonKey: Schema.NullOr(Schema.String) })
    ),
    /** The candidate is already the active one: judged as any activation, then silent. */
    reactivation: Schema.optionalKey(Schema.Boolean)
  }),
  Schema.Struct({
    type: Schema.Literal("turn.visibility"),
    turnId: Schema.String,
    visibility: TurnVisibility,
    /** A turn read by reference (a fork's or side's): the change is this conversation's alone. */
    inherited: Schema.optionalKey(Schema.Boolean)
  }),
  /** DELETE of the tail; `previousTail` becomes the tail (the domain read it: only the tail moves). */
  Schema.Struct({ type: Schema.Literal("turn.delete"), turnId: Schema.String, previousTail: Schema.NullOr(Tail) }),
  Schema.Struct({
    type: Schema.Literal("variant.conceal"),
    turnId: Schema.String,
    variantId: Schema.String,
    concealed: Schema.Boolean
  })
])
export type ConversationEvent = typeof ConversationEvent.Type
