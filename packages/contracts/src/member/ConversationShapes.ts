// The shapes the conversation contracts share (supplement conversations.md "Conversation",
// "Inputs", "Turns and variants", "Feed"): the answers' Conversation, ConversationInput, Turn and
// Variant, and two ways of reading a body: `judged` (JSON types first, then vocabularies and
// bounds) and `optionalBody` (a POST whose body may be left out entirely).
import { Schema, SchemaTransformation } from "effect"
import { coded, specCode } from "../Codes.ts"
import { EffectiveModel, StreamItem } from "./InferenceRequests.ts"
import { RunnerEffects, TaskStatus } from "./RunShapes.ts"

/**
 * A body read in two passes, as the named-agent PUT is: `shape` holds the members' JSON types (an
 * absent member 400 parameter_missing, a mistyped one 400 parameter_invalid), `values` the same
 * members with their vocabularies and bounds (the codes they carry). So every 400 of a body is
 * answered before any 422 or 413.
 */
export const judged = <Shape extends Schema.Top, Values extends Schema.Top>(shape: Shape, values: Values) =>
  shape.pipe(Schema.decodeTo(values, SchemaTransformation.passthrough({ strict: false })))

/**
 * The payloads of a POST whose body is optional: `body`, or no body at all (or JSON null), read as
 * no members. The server reads an empty body as null when one of an endpoint's payloads is null.
 */
export const optionalBody = <Body extends Schema.Top>(body: Body) =>
  [
    body,
    Schema.Null.pipe(
      Schema.decodeTo(
        Schema.toType(body),
        SchemaTransformation.transform({ decode: () => ({}) as Body["Type"], encode: () => null })
      )
    )
  ] as const

/** Text of at most 1 MiB of UTF-8 (else 413 content_too_large). */
export const TextValue = Schema.String.check(
  Schema.makeFilter<string>((text) => new TextEncoder().encode(text).length <= 1024 * 1024, {
    expected: "at most 1 MiB of text",
    [specCode]: "content_too_large"
  })
)

/** A string from `literals`; any other string is 422 validation_failed (a non-string is judged by the shape). */
export const vocabulary = <const Literals extends ReadonlyArray<string>>(literals: Literals) =>
  coded("validation_failed")(Schema.Literals(literals))

export const accessLevels = ["full", "read", "none"] as const

/** Nested blocks whose inner shape is open (usage, context, usage_summary). */
const Block = Schema.Record(Schema.String, Schema.Unknown)

export const Speaker = Schema.Struct({
  user_public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String
})

/** A binding as stored (the request's members). */
export const MemoryBinding = Schema.Struct({
  name: Schema.String,
  scope: Schema.String,
  access: Schema.String,
  conversation_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  speaker_public_id: Schema.optionalKey(Schema.NullOr(Schema.String))
})

export const MemoryContext = Schema.Struct({ bindings: Schema.Array(MemoryBinding) })

/** A resolved binding: the stored one with its anchor UUID (a speaker binding: agent and speaker). */
export const ResolvedMemoryBinding = Schema.Struct({
  ...MemoryBinding.fields,
  workspace_public_id: Schema.optionalKey(Schema.String),
  user_public_id: Schema.optionalKey(Schema.String),
  agent_public_id: Schema.optionalKey(Schema.String)
})

export const EffectiveMemoryContext = Schema.Struct({ bindings: Schema.Array(ResolvedMemoryBinding) })

export const AccessEntry = Schema.Struct({
  user_public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  level: Schema.Literals(accessLevels)
})

/** The creator and the answerer are full by derivation and never listed. */
export const Access = Schema.Struct({ default: Schema.Literals(accessLevels), entries: Schema.Array(AccessEntry) })

export const DefaultRunner = Schema.Struct({
  executor_public_id: Schema.String,
  display_name: Schema.String,
  presence: Schema.Literals(["online", "offline", "not_yet_seen"]),
  last_seen_at: Schema.optionalKey(Schema.NullOr(Schema.DateFromString))
})

/** A child conversation's parent: spawn_node_key is null for a schedule's execution. */
export const Parent = Schema.Struct({
  public_id: Schema.String,
  spawn_node_key: Schema.NullOr(Schema.String),
  label: Schema.NullOr(Schema.String)
})

/** The caller-authored queue: its bound and the unconsumed rows counted against it. */
export const InputQueue = Schema.Struct({ limit: Schema.Natural, held: Schema.Natural })

/** Basic projection (lists). */
export const ConversationSummary = Schema.Struct({
  public_id: Schema.String,
  workspace_public_id: Schema.String,
  lock_version: Schema.Natural,
  title: Schema.NullOr(Schema.String),
  metadata: Block,
  billing_subject: Schema.NullOr(Schema.String),
  source_conversation_public_id: Schema.NullOr(Schema.String),
  forked_from_turn_public_id: Schema.NullOr(Schema.String),
  forked_from_variant_public_id: Schema.NullOr(Schema.String),
  parent: Schema.NullOr(Parent),
  side: Schema.Boolean,
  archived_at: Schema.NullOr(Schema.DateFromString),
  active_turn_public_id: Schema.NullOr(Schema.String),
  context_revision: Schema.Natural,
  last_activity_at: Schema.DateFromString,
  created_at: Schema.DateFromString,
  updated_at: Schema.DateFromString
})

/** Full projection (single answers). */
export const Conversation = Schema.Struct({
  ...ConversationSummary.fields,
  answering_user_public_id: Schema.String,
  creator_public_id: Schema.String,
  default_runner: Schema.NullOr(DefaultRunner),
  access: Access,
  memory_context: Schema.NullOr(MemoryContext),
  effective_memory_context: EffectiveMemoryContext,
  context: Schema.NullOr(Block).annotate({
    description:
      "{used_tokens, input_tokens, output_tokens, cache_read_tokens?, window_tokens, used_percent, as_of_model} " +
      "from the newest sample that reported usage; null until one did"
  }),
  usage_summary: Block,
  input_queue: InputQueue,
  latest_event_cursor: Schema.NullOr(Schema.String)
})

export const ConversationResponse = Schema.Struct({ conversation: Conversation })

export const UploadDescriptor = Schema.Struct({
  public_id: Schema.String,
  filename: Schema.String,
  content_type: Schema.String,
  byte_size: Schema.Natural
})

/** An input row: the create members as stored (addressee resolved, delivery_mode defaulted) and its state. */
export const ConversationInput = Schema.Struct({
  public_id: Schema.String,
  conversation_public_id: Schema.String,
  kind: Schema.String,
  text: Schema.NullOr(Schema.String),
  queue_position: Schema.Natural,
  state: Schema.Literals(["pending", "steering", "blocked", "consumed"]),
  blocked_reason: Schema.NullOr(Schema.String),
  role: Schema.String,
  origin: Schema.Literals(["person", "agent", "task_result", "child"]),
  author_public_id: Schema.NullOr(Schema.String),
  speaker: Schema.NullOr(Speaker),
  answering_user_public_id: Schema.NullOr(Schema.String),
  delivery_mode: Schema.String,
  deliver_at: Schema.NullOr(Schema.DateFromString),
  visible_in_context: Schema.Boolean,
  context_options: Schema.Struct({
    history: Schema.optionalKey(Schema.Unknown),
    inline: Schema.optionalKey(Schema.Unknown)
  }),
  attachments: Schema.Array(UploadDescriptor),
  model: Schema.optionalKey(Schema.NullOr(Block)),
  configuration: Schema.optionalKey(Schema.NullOr(Block)),
  tool_names: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  approval_mode: Schema.optionalKey(Schema.NullOr(Schema.String)),
  context_mode: Schema.optionalKey(Schema.NullOr(Schema.String)),
  history: Schema.optionalKey(Schema.NullOr(Block)),
  execution_declaration: Schema.optionalKey(Schema.Unknown),
  model_selection: Schema.optionalKey(Schema.Unknown),
  fallback_models: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.String))),
  steps: Schema.optionalKey(Schema.NullOr(Schema.Array(Schema.Unknown))),
  variables: Schema.optionalKey(Schema.NullOr(Block)),
  reasoning_replay: Schema.optionalKey(Schema.Unknown),
  expected_context_revision: Schema.optionalKey(Schema.NullOr(Schema.Natural)),
  expected_tail_turn_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  expected_steering_run_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  speaker_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  sender_conversation_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({
    description: "kernel mail (spawn, send): the sending conversation (null: a standalone run's)"
  }),
  sender_run_public_id: Schema.optionalKey(Schema.String).annotate({ description: "kernel mail: the sending run" }),
  sender_task_key: Schema.optionalKey(Schema.String).annotate({ description: "kernel mail: the sending call's task" }),
  lock_version: Schema.Natural,
  created_at: Schema.DateFromString
})

export const turnKinds = ["message", "direct_reply", "compaction_summary"] as const
export const turnStatuses = ["pending", "running", "completed", "failed", "canceled", "timed_out"] as const
export const turnVisibilities = ["visible", "hidden", "excluded_from_context"] as const
export const variantSources = ["inference", "run", "edit", "fallback", "fork"] as const

/** A run-backed candidate's mainline round (its run's model rounds, in authoring order). */
export const VariantRound = Schema.Struct({
  task_key: Schema.String,
  status: TaskStatus,
  visibility: Schema.String,
  text_preview: Schema.optionalKey(Schema.String),
  text_bytes: Schema.optionalKey(Schema.Natural),
  usage: Schema.optionalKey(Block),
  started_at: Schema.optionalKey(Schema.DateFromString),
  completed_at: Schema.optionalKey(Schema.DateFromString)
})

/** A candidate of a turn's deck. */
export const Variant = Schema.Struct({
  public_id: Schema.String,
  source: Schema.Literals(variantSources),
  status: Schema.Literals(turnStatuses),
  active: Schema.Boolean,
  concealed: Schema.optionalKey(Schema.Boolean).annotate({ description: "hidden by a variant PATCH" }),
  model: Schema.NullOr(EffectiveModel),
  preview: Schema.NullOr(Schema.String),
  content_preview: Schema.NullOr(Schema.String),
  content: Schema.NullOr(Schema.String),
  prompt_text: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "reply turns: the turn's" }),
  usage: Schema.NullOr(Block),
  failure_reason_key: Schema.NullOr(Schema.String),
  origin_variant_public_id: Schema.NullOr(Schema.String),
  run_public_id: Schema.NullOr(Schema.String),
  rounds: Schema.Array(VariantRound).annotate({
    description: "run-backed: the run's mainline rounds; [] otherwise"
  }),
  runner_effects: Schema.NullOr(RunnerEffects).annotate({ description: "run-backed: its run's; null otherwise" }),
  memory_context: Schema.NullOr(MemoryContext).annotate({ description: "null means the default roots" }),
  created_at: Schema.DateFromString
})

export const VariantResponse = Schema.Struct({ variant: Variant })

export const CallbackResult = Schema.Struct({
  conversation_public_id: Schema.String,
  input_public_id: Schema.String,
  turn_public_id: Schema.String,
  variant_public_id: Schema.String,
  requester_speaker_public_id: Schema.NullOr(Schema.String)
})

export const CallbackSource = Schema.Struct({
  input_public_id: Schema.String,
  origin: Schema.String,
  sender_conversation_public_id: Schema.NullOr(Schema.String),
  sender_run_public_id: Schema.NullOr(Schema.String),
  sender_task_key: Schema.NullOr(Schema.String),
  result: Schema.Unknown
})

/** One timeline position; `speaker` is absent on a compaction_summary (spoken by the system). */
export const Turn = Schema.Struct({
  public_id: Schema.String,
  position: Schema.Natural,
  kind: Schema.Literals(turnKinds),
  role: Schema.String,
  status: Schema.Literals(turnStatuses),
  visibility: Schema.Literals(turnVisibilities),
  inherited: Schema.Boolean,
  origin: Schema.NullOr(Schema.String),
  answering_user_public_id: Schema.NullOr(Schema.String),
  speaker: Schema.optionalKey(Speaker),
  prompt_text: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "reply turns only" }),
  model: Schema.optionalKey(Schema.NullOr(EffectiveModel)).annotate({ description: "the active variant's" }),
  preview: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "the active variant's" }),
  content: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "the active variant's" }),
  input_public_id: Schema.NullOr(Schema.String),
  sender_conversation_public_id: Schema.NullOr(Schema.String),
  sender_run_public_id: Schema.NullOr(Schema.String),
  sender_task_key: Schema.NullOr(Schema.String),
  callback_result: Schema.NullOr(CallbackResult),
  callback_sources: Schema.Array(CallbackSource),
  active_variant: Schema.NullOr(Variant),
  running_variant: Schema.NullOr(Variant).annotate({
    description: "a pending or running regeneration that differs from the displayed candidate"
  }),
  failure_reason_key: Schema.NullOr(Schema.String),
  created_at: Schema.DateFromString
})

export const TurnResponse = Schema.Struct({ turn: Turn })

/** A feed item: the inference replay stream's envelope over the conversation's stream. */
export const FeedItem = StreamItem

/** One message of an assembled request: the estimate's render and the sealed request. */
export const RequestEntry = Schema.Struct({ role: Schema.String, parts: Schema.Array(Block) })
