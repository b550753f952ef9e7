// The wire shapes of a run and its tasks as the runs supplement "Run resource and projections"
// gives them: the trace and its task rows, the task read, list rows, the receipt, graph, phases
// and transcript. Answers only; request bodies are judged by the step compiler (not here).
import { Schema } from "effect"
import { Pagination } from "../Pagination.ts"

/** A nested block whose members the contract leaves open (usage, a step tree, a checkpoint). */
const Block = Schema.Record(Schema.String, Schema.Unknown)
const Stamp = Schema.DateFromString

export const runStatuses = [
  "pending",
  "running",
  "paused",
  "needs_attention",
  "canceling",
  "completed",
  "canceled"
] as const
export const RunStatus = Schema.Literals(runStatuses)

export const taskStatuses = [
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
] as const
export const TaskStatus = Schema.Literals(taskStatuses)

export const RunTaskKind = Schema.Literals(["model_task", "tool_task", "await_task", "join_task"])
const TaskLifetime = Schema.Literals(["conversation", "turn"])
const TaskWake = Schema.Literals(["auto", "passive"])
const TaskVisibility = Schema.Literals(["visible", "collapsed", "hidden"])

/** Who a listed row is for; a pool row carries the role alone. */
export const AddressedTo = Schema.Struct({
  role: Schema.Literals(["runner", "agent_application", "tool_provider"]),
  executor_public_id: Schema.optionalKey(Schema.String)
})

/** The runner selected at acceptance. */
export const TaskTarget = Schema.Struct({
  executor_public_id: Schema.String,
  display_name: Schema.optionalKey(Schema.String)
})

/** A task row of the trace (and the commit's answer). Optional members appear when they apply. */
export const RunTaskRow = Schema.Struct({
  key: Schema.String,
  kind: RunTaskKind,
  lifetime: TaskLifetime,
  wake: TaskWake,
  status: TaskStatus,
  visibility: TaskVisibility,
  after: Schema.Array(Schema.String),
  waiting_on: Schema.optionalKey(Schema.Array(Schema.String)),
  mainline: Schema.optionalKey(Schema.Boolean),
  on_failure: Schema.Literals(["halt", "propagate", "absorb"]),
  failure_resolution: Schema.optionalKey(Schema.Literals(["abandoned", "canceled"])),
  result: Schema.optionalKey(Schema.Struct({ resolved: Schema.Boolean })),
  tool_name: Schema.optionalKey(Schema.String),
  target: Schema.optionalKey(TaskTarget),
  addressed_to: Schema.optionalKey(AddressedTo),
  claimed_by: Schema.optionalKey(Schema.Struct({ executor_public_id: Schema.String })),
  approval: Schema.optionalKey(
    Schema.Struct({
      origin: Schema.String,
      decided_by: Schema.optionalKey(Schema.String),
      decided_at: Stamp
    })
  ),
  error: Schema.optionalKey(Schema.Struct({ key: Schema.String, detail: Schema.optionalKey(Schema.String) })),
  deadline_at: Schema.optionalKey(Schema.NullOr(Stamp)),
  created_at: Stamp,
  started_at: Schema.NullOr(Stamp),
  completed_at: Schema.NullOr(Stamp)
})
export type RunTaskRow = typeof RunTaskRow.Type

/** A content block of a committed result (a committed string reads as one text block). */
export const ContentBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("resource_link"),
    uri: Schema.String,
    name: Schema.String,
    mimeType: Schema.optionalKey(Schema.String),
    size: Schema.optionalKey(Schema.Natural),
    title: Schema.optionalKey(Schema.String),
    description: Schema.optionalKey(Schema.String)
  })
])
export type ContentBlock = typeof ContentBlock.Type

/** `GET …/tasks/{key}`: the row with the task's inputs and, once settled, its result. */
export const RunTaskDetail = Schema.Struct({
  ...RunTaskRow.fields,
  prompt: Schema.optionalKey(Schema.String),
  options: Schema.optionalKey(Schema.Array(Schema.String)),
  multi: Schema.optionalKey(Schema.Boolean),
  instructions: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.Unknown),
  tool_input: Schema.optionalKey(Block),
  timeout_ms: Schema.optionalKey(Schema.Natural),
  output: Schema.optionalKey(Schema.String),
  output_preview: Schema.optionalKey(Schema.String),
  content: Schema.optionalKey(Schema.Array(ContentBlock)),
  structured_content: Schema.optionalKey(Schema.Unknown),
  is_error: Schema.optionalKey(Schema.Boolean),
  title: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(Block),
  result_type: Schema.optionalKey(Schema.String),
  usage: Schema.optionalKey(Block),
  tool_definitions: Schema.optionalKey(Schema.Array(Block)),
  request_bytes: Schema.optionalKey(Schema.Natural)
})
export type RunTaskDetail = typeof RunTaskDetail.Type

/** One counter per task status, zeros included, plus `total`. */
export const TaskProgress = Schema.Struct({
  waiting: Schema.Natural,
  needs_approval: Schema.Natural,
  running: Schema.Natural,
  dispatched: Schema.Natural,
  awaiting_input: Schema.Natural,
  completed: Schema.Natural,
  failed: Schema.Natural,
  canceled: Schema.Natural,
  timed_out: Schema.Natural,
  uncertain: Schema.Natural,
  skipped: Schema.Natural,
  total: Schema.Natural
})

export const Attention = Schema.Struct({
  reason: Schema.Literals(["halt_failure", "deliverable_unresolved", "approval_required", "awaiting_human"]),
  blocked_task_keys: Schema.Array(Schema.String),
  blocked_task_overflow: Schema.optionalKey(Schema.Boolean)
})

export const ApprovalRule = Schema.Struct({
  tool: Schema.String,
  path: Schema.optionalKey(Schema.String),
  match: Schema.optionalKey(Schema.String),
  verdict: Schema.Literals(["allow", "ask", "deny"]),
  reason: Schema.optionalKey(Schema.String),
  origin: Schema.optionalKey(Schema.Literals(["model", "author", "kernel"]))
})

export const RunnerEffects = Schema.Struct({
  status: Schema.Literals(["untouched", "touched", "unavailable"]),
  runners: Schema.Array(
    Schema.Struct({
      runner_executor_public_id: Schema.String,
      run_public_id: Schema.String,
      task_key: Schema.String,
      checkpoint: Schema.Unknown
    })
  ),
  reason: Schema.optionalKey(Schema.String)
})

export const RunDefaultRunner = Schema.Struct({
  executor_public_id: Schema.String,
  display_name: Schema.String,
  presence: Schema.optionalKey(Schema.Literals(["online", "offline", "not_yet_seen"])),
  last_seen_at: Schema.optionalKey(Schema.NullOr(Stamp))
})

export const RunTurn = Schema.Struct({
  status: Schema.String,
  failure_reason_key: Schema.optionalKey(Schema.String),
  public_id: Schema.optionalKey(Schema.String),
  conversation_public_id: Schema.optionalKey(Schema.String),
  answering_user_public_id: Schema.optionalKey(Schema.String),
  model: Schema.optionalKey(Schema.Unknown)
})

/** The trace: `GET …/runs/{id}` and every run verb's answer, wrapped `{run}`. */
export const RunTrace = Schema.Struct({
  public_id: Schema.String,
  workspace_public_id: Schema.String,
  conversation_public_id: Schema.NullOr(Schema.String),
  creator_public_id: Schema.String,
  status: RunStatus,
  deliverable_task_key: Schema.String,
  tasks: Schema.Array(RunTaskRow),
  task_progress: TaskProgress,
  attention: Schema.NullOr(Attention),
  approval_mode: Schema.Literals(["bypass", "ask", "rules"]),
  approval_rules: Schema.Array(ApprovalRule),
  prompt_mechanism: Schema.Literals(["raw", "default", "assembly"]),
  billing_subject: Schema.NullOr(Schema.String),
  requester_speaker_public_id: Schema.NullOr(Schema.String),
  default_runner: Schema.NullOr(RunDefaultRunner),
  runner_effects: RunnerEffects,
  input_queue: Schema.Struct({ limit: Schema.Natural, held: Schema.Natural }),
  turn: RunTurn,
  created_at: Stamp,
  updated_at: Stamp,
  started_at: Schema.NullOr(Stamp),
  paused_at: Schema.NullOr(Stamp),
  completed_at: Schema.NullOr(Stamp)
})
export type RunTrace = typeof RunTrace.Type

export const RunResponse = Schema.Struct({ run: RunTrace })
export const RunTaskResponse = Schema.Struct({ task: RunTaskRow })
export const RunTaskDetailResponse = Schema.Struct({ task: RunTaskDetail })

/** What an accepted envelope (create or append) wrote. */
export const RunReceipt = Schema.Struct({
  accepted_task_keys: Schema.Array(Schema.String),
  steps: Schema.Array(Schema.Unknown),
  deliverable_task_key: Schema.String,
  revision: Schema.Natural,
  resolution_tokens: Schema.Record(Schema.String, Schema.String)
})
export type RunReceipt = typeof RunReceipt.Type

export const RunCreated = Schema.Struct({ run: RunTrace, receipt: RunReceipt })
export const RunAppended = Schema.Struct({ receipt: RunReceipt })

export const RunListRow = Schema.Struct({
  public_id: Schema.String,
  status: RunStatus,
  conversation_public_id: Schema.NullOr(Schema.String),
  attention: Schema.NullOr(Schema.Struct({ reason: Schema.String })),
  created_at: Stamp
})
export const RunList = Schema.Struct({ runs: Schema.Array(RunListRow), pagination: Pagination })

export const RunGraph = Schema.Struct({
  nodes: Schema.Array(
    Schema.Struct({
      key: Schema.String,
      kind: RunTaskKind,
      lifetime: TaskLifetime,
      wake: TaskWake,
      status: TaskStatus,
      visibility: TaskVisibility,
      after: Schema.Array(Schema.String),
      deliverable: Schema.Boolean,
      input_from: Schema.Array(Schema.String),
      result_from: Schema.Array(Schema.String),
      mainline: Schema.optionalKey(Schema.Boolean),
      expansion_parent: Schema.optionalKey(Schema.String),
      join: Schema.optionalKey(
        Schema.Struct({
          until: Schema.Union([Schema.Literal("any"), Schema.Natural]).annotate({
            description: "a race's rule as written: any, or the quorum k"
          }),
          losers: Schema.Literals(["cancel", "run_out"])
        })
      )
    })
  ),
  edges: Schema.Array(Schema.Struct({ from: Schema.String, to: Schema.String, structural: Schema.Boolean })),
  mermaid: Schema.String
})

export const RunPhases = Schema.Struct({
  phases: Schema.Array(
    Schema.Struct({
      label: Schema.String,
      keys: Schema.Array(Schema.String),
      done: Schema.Natural,
      total: Schema.Natural,
      status: Schema.String
    })
  ),
  current: Schema.NullOr(Schema.String).annotate({
    description: "the label of the first phase not completed, else null"
  }),
  background: Schema.Array(
    Schema.Struct({
      key: Schema.String,
      status: TaskStatus,
      result_delivered_at: Schema.optionalKey(Schema.NullOr(Stamp))
    })
  ),
  spend: Block
})

/** A call a transcript round made: `name` is what the model called, `tool` the wire name behind an alias. */
export const TranscriptCall = Schema.Struct({
  task_key: Schema.String,
  tool_call_id: Schema.optionalKey(Schema.String),
  name: Schema.String,
  tool: Schema.optionalKey(Schema.String),
  status: TaskStatus,
  is_error: Schema.optionalKey(Schema.Boolean),
  title: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(Block),
  output_preview: Schema.optionalKey(Schema.String),
  output_bytes: Schema.optionalKey(Schema.Natural),
  started_at: Schema.optionalKey(Stamp),
  completed_at: Schema.optionalKey(Stamp)
})

export const TranscriptRound = Schema.Struct({
  task_key: Schema.String,
  mainline: Schema.Boolean,
  status: TaskStatus,
  visibility: TaskVisibility,
  text_preview: Schema.optionalKey(Schema.String),
  text_bytes: Schema.optionalKey(Schema.Natural),
  usage: Schema.optionalKey(Block),
  error: Schema.optionalKey(Block),
  started_at: Schema.NullOr(Stamp),
  completed_at: Schema.NullOr(Stamp),
  calls: Schema.Struct({ count: Schema.Natural, items: Schema.Array(TranscriptCall) }),
  branches: Schema.Array(Schema.String)
})

export const RunTranscript = Schema.Struct({
  rounds: Schema.Array(TranscriptRound),
  pagination: Schema.Struct({ next_before: Schema.NullOr(Schema.String), has_older: Schema.Boolean })
})
