// Events of a run: its member's verbs (start, pause, resume, stop, append, DELETE, default
// runner), the task verbs, what runners do to claimed tasks (claim, extend, commit), what its
// model rounds' inference requests tell back, and its timers. Every command carries `at` (epoch
// milliseconds, the caller's clock); a timer carries the instant it was due.
import { Schema } from "effect"
import { InferenceReplied } from "../inferenceRequest/events.ts"
import { CompiledTaskSpec, ExecutorRef } from "./context.ts"

const at = Schema.Number
const key = Schema.String

/** Who decided an approval or answered an ask: the creator as a human or as its agent. */
export const Decider = Schema.Struct({
  userId: Schema.String,
  origin: Schema.Literals(["human", "agent"]),
  /** false: neither the run's creator nor its steward, refused once the task is known (not_authorized). */
  decides: Schema.optionalKey(Schema.Boolean)
})
export type Decider = typeof Decider.Type

/** A resolve entry of an append: an authored ask answered with optional content. */
export const ResolveEntry = Schema.Struct({ task: key, content: Schema.NullOr(Schema.Unknown) })
export type ResolveEntry = typeof ResolveEntry.Type

/** How a model's tool call was addressed by the addressing job (or not served at all). */
export const CallAddress = Schema.Struct({
  key,
  target: Schema.Union([
    Schema.Struct({ kind: Schema.Literal("runner"), executor: ExecutorRef }),
    Schema.Struct({ kind: Schema.Literal("pool"), executorIds: Schema.Array(Schema.String) }),
    Schema.Struct({ kind: Schema.Literal("not_served") }),
    /** A `tool_call` naming no tool of the creator's declaration. */
    Schema.Struct({ kind: Schema.Literal("not_declared") })
  ]),
  timeoutMs: Schema.Number,
  /** The announced timeout_ms (caps an extension). */
  announcedTimeoutMs: Schema.optionalKey(Schema.Number),
  replayable: Schema.Boolean
})
export type CallAddress = typeof CallAddress.Type

/**
 * What a hosted run tells its conversation whenever it completes, is canceled, needs attention or
 * runs again after attention (an event of the conversation's machine, shaped as an inference
 * request's reply):
 * `requestId` is the run's public id; `errorCode` the attention reason or the cancellation.
 */
export const RunReplied = Schema.Struct({
  type: Schema.Literal("run.replied"),
  requestId: Schema.String,
  /** running: a run held for attention runs again (its turn with it). */
  status: Schema.Literals(["completed", "failed", "canceled", "running"]),
  errorCode: Schema.NullOr(Schema.String),
  declined: Schema.Boolean,
  usage: Schema.NullOr(Schema.Record(Schema.String, Schema.Unknown))
})
export type RunReplied = typeof RunReplied.Type

/** What a hosted run tells its conversation when a steer it held lands in a round. */
export const InputLanded = Schema.Struct({ type: Schema.Literal("input.landed"), inputId: Schema.String })
export type InputLanded = typeof InputLanded.Type

export const RunEvent = Schema.Union([
  Schema.Struct({ type: Schema.Literal("run.start"), at }),
  Schema.Struct({ type: Schema.Literal("run.pause"), force: Schema.Boolean, at }),
  Schema.Struct({ type: Schema.Literal("run.resume"), at }),
  Schema.Struct({ type: Schema.Literal("run.stop"), force: Schema.Boolean, at }),
  /**
   * An append compiled against `compiledAt` (the revision the compiler read): a run that moved
   * since is refused `recompile` and the domain compiles again.
   */
  Schema.Struct({
    type: Schema.Literal("run.append"),
    compiledAt: Schema.Number,
    expectedRevision: Schema.NullOr(Schema.Number),
    tasks: Schema.Array(CompiledTaskSpec),
    /** What each new task's row shows beside its spec (prompt, tool_input, options …), by key. */
    details: Schema.Record(Schema.String, Schema.Unknown),
    deliverable: key,
    /** The first step is a top-level model step (tip_live judges it). */
    seedIsModel: Schema.Boolean,
    resolve: Schema.Array(ResolveEntry),
    at
  }),
  Schema.Struct({ type: Schema.Literal("run.defaultRunner"), executor: Schema.NullOr(ExecutorRef), at }),
  Schema.Struct({ type: Schema.Literal("run.tombstone"), at }),
  Schema.Struct({ type: Schema.Literal("run.reap") }),
  /** The run inputs door: a message row, queued (or a steer), scheduled when `dueAt` is later. */
  Schema.Struct({
    type: Schema.Literal("input.accept"),
    inputId: Schema.String,
    steer: Schema.Boolean,
    dueAt: Schema.NullOr(Schema.Number),
    /** What the row keeps (its text, author, Idempotency-Key). */
    row: Schema.Record(Schema.String, Schema.Unknown),
    at
  }),
  Schema.Struct({
    type: Schema.Literal("input.edit"),
    inputId: Schema.String,
    expectedLockVersion: Schema.NullOr(Schema.Number),
    text: Schema.NullOr(Schema.String),
    /** A new delivery time (null: due now); absent keeps it. */
    dueAt: Schema.optionalKey(Schema.NullOr(Schema.Number)),
    /** A held steer's only edit: delivery_mode steer_now lands it at once. */
    steerNow: Schema.Boolean,
    at
  }),
  Schema.Struct({ type: Schema.Literal("input.delete"), inputId: Schema.String, at }),
  Schema.Struct({ type: Schema.Literal("input.reorder"), inputIds: Schema.Array(Schema.String), at }),
  /** Timer: a scheduled row's time came. */
  Schema.Struct({ type: Schema.Literal("input.due"), inputId: Schema.String, dueAt: Schema.Number }),
  /**
   * An executor's address was revoked (or its human removed): its unclaimed rows fail
   * executor_revoked; rows it claimed settle by their own deadline.
   */
  Schema.Struct({ type: Schema.Literal("executor.revoked"), executorId: Schema.String, at }),
  /** A runner claims a dispatched tool task; the domain minted the token and sends its digest. */
  Schema.Struct({
    type: Schema.Literal("task.claim"),
    key,
    executorId: Schema.String,
    /** The executor is a tool provider announcing the tool now (a pool row is addressed to it). */
    announces: Schema.Boolean,
    /** Eligible for the run's frozen answering principal (the domain's discovery rule). */
    eligible: Schema.Boolean,
    /** The run's creator still has write standing. */
    authorized: Schema.Boolean,
    /** The claimant's own announcement of the tool: a pool row's claim is governed by it. */
    served: Schema.optional(
      Schema.Struct({
        timeoutMs: Schema.Number,
        announcedTimeoutMs: Schema.optionalKey(Schema.Number),
        replayable: Schema.Boolean
      })
    ),
    tokenDigest: Schema.String,
    at
  }),
  Schema.Struct({
    type: Schema.Literal("task.extend"),
    key,
    executorId: Schema.String,
    tokenDigest: Schema.String,
    timeoutMs: Schema.Number,
    at
  }),
  /** A runner's commit, judged valid by the domain; `result` is what the task row keeps. */
  Schema.Struct({
    type: Schema.Literal("task.commit"),
    key,
    executorId: Schema.String,
    /** The executor is a tool provider announcing the tool now (as task.claim's). */
    announces: Schema.optional(Schema.Boolean),
    tokenDigest: Schema.String,
    outcome: Schema.Literals(["completed", "failed"]),
    result: Schema.Record(Schema.String, Schema.Unknown),
    /** The body's first fault (its spec code), judged after the claim checks; null when none. */
    fault: Schema.NullOr(Schema.String),
    at
  }),
  Schema.Struct({
    type: Schema.Literal("task.resolve"),
    key,
    tokenDigest: Schema.NullOr(Schema.String),
    outcome: Schema.Literals(["completed", "failed"]),
    content: Schema.NullOr(Schema.Unknown),
    /** The body's fault (an outcome outside the vocabulary), judged after the task's own rules. */
    fault: Schema.optionalKey(Schema.NullOr(Schema.String)),
    at
  }),
  Schema.Struct({ type: Schema.Literal("task.retry"), key, model: Schema.NullOr(Schema.String), at }),
  Schema.Struct({ type: Schema.Literal("task.abandon"), key, at }),
  Schema.Struct({ type: Schema.Literal("task.approve"), key, by: Decider, at }),
  Schema.Struct({ type: Schema.Literal("task.deny"), key, by: Decider, reason: Schema.NullOr(Schema.String), at }),
  Schema.Struct({ type: Schema.Literal("task.cancel"), key, at }),
  /** The compact verb: `model` summarizes (null: the task's own model); rules/compact.ts. */
  Schema.Struct({ type: Schema.Literal("task.compact"), key, model: Schema.NullOr(Schema.String), at }),
  /** A kernel call the service carried out (a job of the run): its result, or its failure's key. */
  Schema.Struct({
    type: Schema.Literal("task.kernelAnswered"),
    key,
    generation: Schema.Number,
    outcome: Schema.Literals(["completed", "failed"]),
    result: Schema.Record(Schema.String, Schema.Unknown),
    errorKey: Schema.NullOr(Schema.String),
    at
  }),
  /**
   * A kernel call whose namespace the run's workspace overrides (svc.memory, a tool provider's):
   * the call becomes that provider's tool call (rules/reports.ts kernelRouted). `scope` is what
   * its inbox row shows (a hosted run's resolved memory bindings; null standalone).
   */
  Schema.Struct({
    type: Schema.Literal("task.kernelRouted"),
    key,
    generation: Schema.Number,
    executor: ExecutorRef,
    timeoutMs: Schema.Number,
    announcedTimeoutMs: Schema.optionalKey(Schema.Number),
    replayable: Schema.Boolean,
    /** The model's call id (the inbox row's tool_call_id). */
    toolCallId: Schema.String,
    scope: Schema.NullOr(Schema.Struct({ bindings: Schema.Array(Schema.Unknown) })),
    at
  }),
  /**
   * A spawned child's first reply settled (rules/mail.ts), told by the child's settling step: a
   * spawn holding for it completes with its text (or fails), one of lifetime turn lets the run settle.
   */
  Schema.Struct({
    type: Schema.Literal("task.replyReturned"),
    key,
    generation: Schema.Number,
    outcome: Schema.Literals(["completed", "failed"]),
    result: Schema.Record(Schema.String, Schema.Unknown),
    errorKey: Schema.NullOr(Schema.String),
    at
  }),
  /** The addressing job's answer for a model's tool calls. */
  Schema.Struct({ type: Schema.Literal("task.addressed"), calls: Schema.Array(CallAddress), at }),
  /** Another run's wait asks this run to tell it when `key` settles (rules/crossRun.ts). */
  Schema.Struct({
    type: Schema.Literal("task.watch"),
    key,
    watcher: Schema.Struct({ run: Schema.String, key, generation: Schema.Number })
  }),
  /**
   * A wait on another run's task hears back: the task settled (its result is read from that run's
   * row), or it is no task of an earlier run of the same conversation.
   */
  Schema.Struct({
    type: Schema.Literal("wait.answered"),
    key,
    generation: Schema.Number,
    outcome: Schema.Literals(["settled", "not_found"])
  }),
  /** Timer: a task's deadline (claim, dispatch, ask, wait or approval hold) of one generation. */
  Schema.Struct({
    type: Schema.Literal("task.deadline"),
    key,
    generation: Schema.Number,
    deadlineAt: Schema.Number
  }),
  /** A model round's inference request ended (its `ref` names the task, generation and round). */
  InferenceReplied
])
export type RunEvent = typeof RunEvent.Type
