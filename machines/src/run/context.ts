// What a run's machine starts from and remembers: its settings frozen at acceptance, the task
// graph the step compiler produced (one spec per task, in authoring order, kept without its tool
// input: CompiledTaskSpec is what enters, TaskSpec what is kept) and each
// task's standing (status, generation, claim, deadline, approval). Task inputs and results
// (tool input, prompts, committed content, a round's text) live on rows the run's binding writes.
import { Schema } from "effect"
import { ReplyAddress } from "../inferenceRequest/events.ts"

export const TaskKind = Schema.Literals(["model_task", "tool_task", "await_task", "join_task"])
export type TaskKind = typeof TaskKind.Type

export const TaskStatus = Schema.Literals([
  "waiting",
  "needs_approval",
  "running",
  "dispatched",
  "awaiting_input",
  "completed",
  "failed",
  "canceled",
  "timed_out",
  "uncertain",
  "skipped"
])
export type TaskStatus = typeof TaskStatus.Type

export const OnFailure = Schema.Literals(["halt", "propagate", "absorb"])
export type OnFailure = typeof OnFailure.Type

/** Who wrote a task: a member's step, a model's tool call, or the kernel (joins, summarizers). */
export const Origin = Schema.Literals(["author", "model", "kernel"])
export type Origin = typeof Origin.Type

export const Visibility = Schema.Literals(["visible", "collapsed", "hidden"])
export type Visibility = typeof Visibility.Type

/** An executor as a task names it: its public id and display name. */
export const ExecutorRef = Schema.Struct({ executorId: Schema.String, displayName: Schema.String })
export type ExecutorRef = typeof ExecutorRef.Type

/** An executor's effect profile as announced (SUPPLEMENT "Executor plane"). */
export const EffectProfile = Schema.Record(Schema.String, Schema.Unknown)

/**
 * Where a tool task goes: one runner (frozen at acceptance), a pool of the tool providers
 * announcing the name, or nowhere yet (a model's call, addressed by a job after the round).
 */
export const ToolTarget = Schema.Union([
  Schema.Struct({ kind: Schema.Literal("runner"), executor: ExecutorRef }),
  Schema.Struct({ kind: Schema.Literal("pool"), executorIds: Schema.Array(Schema.String) }),
  Schema.Struct({ kind: Schema.Literal("unaddressed") })
])
export type ToolTarget = typeof ToolTarget.Type

export const ToolSpec = Schema.Struct({
  name: Schema.String,
  /** The catalog wire name behind an alias, when the model called an alias. */
  alias: Schema.NullOr(Schema.String),
  target: ToolTarget,
  /** The step's, else the announced, else 600000. */
  timeoutMs: Schema.Number,
  /** The announced timeout_ms, which also caps an extension (absent: one hour alone caps it). */
  announcedTimeoutMs: Schema.optionalKey(Schema.Number),
  /** The announced profile makes the call replayable (read_only, pure or intrinsic idempotency). */
  replayable: Schema.Boolean,
  /** The provider's call id for a model's call; the task key for an authored step. */
  toolCallId: Schema.String,
  /** A model's `tool_call` of this declared tool (rules/toolCall.ts): addressed only if declared. */
  via: Schema.optionalKey(Schema.Literal("tool_call"))
})
export type ToolSpec = typeof ToolSpec.Type

/**
 * A tool as compiled (the step compiler's, a model's call): with the call's input (≤ 64 KiB
 * canonical), judged by the approval rules as the task enters the run (rules/toolCall.ts keptSpec).
 * The run keeps a ToolSpec: the input lives on the task's row only.
 */
export const CompiledToolSpec = Schema.Struct({
  ...ToolSpec.fields,
  input: Schema.Record(Schema.String, Schema.Unknown)
})
export type CompiledToolSpec = typeof CompiledToolSpec.Type

export const ModelSpec = Schema.Struct({
  /** The model ref frozen at acceptance. */
  model: Schema.String,
  /** How many times a failed round is asked again before it fails (0–5). */
  retry: Schema.Number,
  /** Tool names offered to the round ([] when none). */
  tools: Schema.Array(Schema.String),
  /** The previous mainline round this one continues (null: a fresh context). */
  continues: Schema.NullOr(Schema.String),
  /** A summarizer's (rules/compact.ts): the model task whose round's history it summarizes. */
  summarizes: Schema.optionalKey(Schema.String)
})
export type ModelSpec = typeof ModelSpec.Type

export const AskSpec = Schema.Struct({
  /** Authored asks get a resolution token; a model's ask is answered without one. */
  authored: Schema.Boolean,
  timeoutMs: Schema.Number,
  /** SHA-256 hex of the resolution token minted at acceptance (authored asks). */
  tokenDigest: Schema.NullOr(Schema.String)
})
export type AskSpec = typeof AskSpec.Type

export const WaitSpec = Schema.Struct({
  task: Schema.String,
  /** The earlier run of the same conversation that holds `task` (null: this run). */
  run: Schema.NullOr(Schema.String),
  timeoutMs: Schema.NullOr(Schema.Number)
})
export type WaitSpec = typeof WaitSpec.Type

/** A race's barrier: settles when `until` members completed (any = 1), `losers` then. */
export const JoinSpec = Schema.Struct({
  members: Schema.Array(Schema.String),
  until: Schema.Number,
  losers: Schema.Literals(["cancel", "run_out"])
})
export type JoinSpec = typeof JoinSpec.Type

/**
 * One task as the run keeps it (authoring order). `after` is every key it waits on; `structural`
 * the subset the written order makes (the graph draws the rest as non-structural edges); `results`
 * the keys a model step reads (or a wait's target).
 */
export const TaskSpec = Schema.Struct({
  key: Schema.String,
  kind: TaskKind,
  /** ask | wait for an await task; null otherwise. */
  awaitKind: Schema.NullOr(Schema.Literals(["ask", "wait"])),
  origin: Origin,
  visibility: Visibility,
  mainline: Schema.Boolean,
  after: Schema.Array(Schema.String),
  structural: Schema.Array(Schema.String),
  results: Schema.Array(Schema.String),
  onFailure: OnFailure,
  /** The envelope revision and top-level step index that wrote it (phases). */
  revision: Schema.Number,
  step: Schema.Number,
  /** The model round whose tool calls grew this task (or its continuation). */
  expansionParent: Schema.NullOr(Schema.String),
  tool: Schema.NullOr(ToolSpec),
  /** A model's call the service carries out itself (a kernel tool's canonical name, svc.memory.…). */
  kernel: Schema.optionalKey(Schema.String),
  /**
   * A model's call of a kernel tool (any kind of task it became): the name it called, and the
   * catalog wire name behind it when that name is an alias (the row's tool_name and tool_alias).
   */
  called: Schema.optionalKey(Schema.Struct({ name: Schema.String, alias: Schema.NullOr(Schema.String) })),
  /**
   * spawn and send (rules/mail.ts), and a delegated task with its continuations (rules/delegation.ts):
   * the reply's or result's lifetime and wake as asked (absent: conversation, auto).
   */
  lifetime: Schema.optionalKey(Schema.Literals(["conversation", "turn"])),
  wake: Schema.optionalKey(Schema.Literals(["auto", "passive"])),
  /**
   * A task delegate_task started (and its continuations): its call holds for its result (`waited`),
   * or answered its key and a hosted run returns the result to its conversation (`unwaited`).
   */
  delegated: Schema.optionalKey(Schema.Literals(["waited", "unwaited"])),
  /** When a delegated task's result reached the delegating work (epoch ms; phases' result_delivered_at). */
  resultDeliveredAt: Schema.optionalKey(Schema.NullOr(Schema.Number)),
  /** A spawn asked with wait true: the call completes with the child's first reply. */
  holdsReply: Schema.optionalKey(Schema.Boolean),
  /**
   * A tool task's (rules/toolCall.ts) or a model's kernel call's (rules/kernelApproval.ts) approval
   * verdict, judged over its input as it entered the run (acceptance, append, its round's
   * expansion) and applied when it leaves waiting; absent on every other task.
   */
  approvalVerdict: Schema.optionalKey(
    Schema.Union([
      Schema.Struct({ verdict: Schema.Literal("grant") }),
      Schema.Struct({ verdict: Schema.Literal("park") }),
      Schema.Struct({ verdict: Schema.Literal("fail"), reason: Schema.String })
    ])
  ),
  /** A delegate_task call not granted at once: what its task asks, started once the call is approved. */
  delegation: Schema.optionalKey(
    Schema.Struct({
      prompt: Schema.String,
      model: Schema.NullOr(Schema.String),
      lifetime: Schema.NullOr(Schema.Literals(["conversation", "turn"])),
      wake: Schema.NullOr(Schema.Literals(["auto", "passive"])),
      wait: Schema.Boolean,
      tools: Schema.NullOr(Schema.Array(Schema.String))
    })
  ),
  model: Schema.NullOr(ModelSpec),
  ask: Schema.NullOr(AskSpec),
  wait: Schema.NullOr(WaitSpec),
  join: Schema.NullOr(JoinSpec)
})
export type TaskSpec = typeof TaskSpec.Type

/** One compiled task, as the step compiler produces it: a tool task's tool with its input. */
export const CompiledTaskSpec = Schema.Struct({ ...TaskSpec.fields, tool: Schema.NullOr(CompiledToolSpec) })
export type CompiledTaskSpec = typeof CompiledTaskSpec.Type

export const Approval = Schema.Struct({
  origin: Schema.Literals(["human", "agent"]),
  decidedBy: Schema.String,
  decidedAt: Schema.Number
})
export type Approval = typeof Approval.Type

export const Claim = Schema.Struct({
  executorId: Schema.String,
  tokenDigest: Schema.String,
  claimedAt: Schema.Number
})
export type Claim = typeof Claim.Type

/** A task's standing beside its spec. Times are epoch milliseconds. */
export const Task = Schema.Struct({
  spec: TaskSpec,
  status: TaskStatus,
  /** Bumped by retry: older claim tokens and timers of an earlier generation are dead. */
  generation: Schema.Number,
  failureResolution: Schema.NullOr(Schema.Literals(["abandoned", "canceled"])),
  /** A failure absorbed by its on_failure (dependents ran on). */
  absorbed: Schema.Boolean,
  error: Schema.NullOr(Schema.Struct({ key: Schema.String, detail: Schema.optionalKey(Schema.String) })),
  claim: Schema.NullOr(Claim),
  /** Claimed in this generation (a claim is granted once per generation). */
  claimed: Schema.Boolean,
  deadlineAt: Schema.NullOr(Schema.Number),
  approval: Schema.NullOr(Approval),
  /** Rounds asked so far (model tasks): names each round's request uniquely. */
  rounds: Schema.Number,
  /** Failed rounds of this generation (model tasks; asked again while within spec.retry). */
  failures: Schema.Number,
  createdAt: Schema.Number,
  startedAt: Schema.NullOr(Schema.Number),
  completedAt: Schema.NullOr(Schema.Number),
  /** The round's answer asked for tool calls (model tasks): its expansion was written. */
  expanded: Schema.Boolean,
  /** A spawn whose child's first reply the run waits for (rules/mail.ts), or that reply came back. */
  reply: Schema.optionalKey(Schema.Literals(["awaited", "returned"]))
})
export type Task = typeof Task.Type

export const ApprovalRule = Schema.Struct({
  tool: Schema.String,
  path: Schema.optionalKey(Schema.String),
  match: Schema.optionalKey(Schema.String),
  verdict: Schema.Literals(["allow", "ask", "deny"]),
  reason: Schema.optionalKey(Schema.String),
  origin: Schema.optionalKey(Origin)
})
export type ApprovalRule = typeof ApprovalRule.Type

export const ApprovalMode = Schema.Literals(["bypass", "ask", "rules"])
export type ApprovalMode = typeof ApprovalMode.Type

export const RunInput = Schema.Struct({
  publicId: Schema.String,
  /** Hosted runs: the conversation and its hosting turn (null standalone). */
  conversationId: Schema.NullOr(Schema.String),
  turnId: Schema.NullOr(Schema.String),
  /** The creator's user public id (approvals by the creator; the agent application inbox). */
  creatorId: Schema.String,
  /** The creator's agent application address, when the creator is an agent (ask/approval rows). */
  creatorApplicationId: Schema.NullOr(Schema.String),
  approvalMode: ApprovalMode,
  approvalRules: Schema.Array(ApprovalRule),
  tasks: Schema.Array(CompiledTaskSpec),
  deliverable: Schema.String,
  /**
   * The kernel tools the creator imports, by wire name (`ask` → `svc.human.ask`): a model's call
   * of one is the kernel's (an ask parks for a person, a wait waits), not a runner's.
   */
  kernelTools: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** The creator's kernel tool aliases among `kernelTools`: alias → the catalog wire name behind it. */
  kernelAliases: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** The catalog's effect profile of each kernel tool in `kernelTools`, by canonical name (approval rows). */
  kernelProfiles: Schema.optionalKey(Schema.Record(Schema.String, EffectProfile)),
  /** A hosted run's conversation, told `run.replied` once the run first settles or needs attention. */
  replyTo: Schema.optionalKey(Schema.NullOr(ReplyAddress)),
  at: Schema.Number
})
export type RunInput = typeof RunInput.Type

export const RunStatus = Schema.Literals([
  "pending",
  "running",
  "paused",
  "needs_attention",
  "canceling",
  "completed",
  "canceled"
])
export type RunStatus = typeof RunStatus.Type

export const AttentionReason = Schema.Literals([
  "halt_failure",
  "deliverable_unresolved",
  "approval_required",
  "awaiting_human"
])
export type AttentionReason = typeof AttentionReason.Type

export const Attention = Schema.Struct({
  reason: AttentionReason,
  blockedTaskKeys: Schema.Array(Schema.String),
  overflow: Schema.Boolean
})
export type Attention = typeof Attention.Type

/** The bound of a run's input queue (caller-authored rows not yet consumed). */
export const runInputQueueLimit = 16

/** An unconsumed row of the run inputs door (a standalone run's); its text lives on its row. */
export const RunQueueEntry = Schema.Struct({
  inputId: Schema.String,
  /** A steer lands before the next mainline round; a queued row lands at quiescence as a round. */
  steer: Schema.Boolean,
  /** Epoch milliseconds before which it never lands; null: due. */
  dueAt: Schema.NullOr(Schema.Number),
  position: Schema.Number,
  lockVersion: Schema.Number
})
export type RunQueueEntry = typeof RunQueueEntry.Type

/** Another run's wait on one of this run's tasks (rules/crossRun.ts), told once the task settles. */
export const Watcher = Schema.Struct({
  /** The watched task of this run. */
  task: Schema.String,
  /** The waiting run's public id, its wait task's key and that task's generation. */
  run: Schema.String,
  key: Schema.String,
  generation: Schema.Number
})
export type Watcher = typeof Watcher.Type

export const RunContext = Schema.Struct({
  publicId: Schema.String,
  conversationId: Schema.NullOr(Schema.String),
  turnId: Schema.NullOr(Schema.String),
  creatorId: Schema.String,
  creatorApplicationId: Schema.NullOr(Schema.String),
  approvalMode: ApprovalMode,
  approvalRules: Schema.Array(ApprovalRule),
  /** The run's status as decided by its last step (the machine's state follows it). */
  status: RunStatus,
  /** Tasks in authoring order. */
  tasks: Schema.Array(Task),
  deliverable: Schema.String,
  revision: Schema.Number,
  attention: Schema.NullOr(Attention),
  /** A graceful stop: nothing new starts; the run cancels when the last started work settles. */
  stopping: Schema.Boolean,
  /** When the run paused (epoch ms), null unless paused. */
  pausedAt: Schema.NullOr(Schema.Number),
  startedAt: Schema.NullOr(Schema.Number),
  completedAt: Schema.NullOr(Schema.Number),
  tombstoned: Schema.Boolean,
  /** Where the run's outcome is told (a hosted run's conversation), and whether it was. */
  replyTo: Schema.NullOr(ReplyAddress),
  replied: Schema.Boolean,
  /** The run inputs door's queue, in position order. */
  inputs: Schema.Array(RunQueueEntry),
  nextInputPosition: Schema.Number,
  /** Rounds landed from queued inputs so far (their keys: `i<n>-model`). */
  landed: Schema.Number,
  /** The creator's kernel tools by wire name (canonical names as values). */
  kernelTools: Schema.Record(Schema.String, Schema.String),
  /** The creator's kernel tool aliases: alias → the catalog wire name behind it (absent: none). */
  kernelAliases: Schema.optionalKey(Schema.Record(Schema.String, Schema.String)),
  /** The kernel tools' effect profiles by canonical name (absent: none known). */
  kernelProfiles: Schema.optionalKey(Schema.Record(Schema.String, EffectProfile)),
  /** Waits of later runs on this run's unsettled tasks. */
  watchers: Schema.Array(Watcher)
})
export type RunContext = typeof RunContext.Type
