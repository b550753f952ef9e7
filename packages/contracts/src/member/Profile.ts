// Member: profile. GET /agent_api/v1/profile (spec "Member profile").
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { MemberAuthentication } from "./Caller.ts"

const described = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description })

/** A function block: declared, or a kernel tool alias read back as the block it exposes. */
const FunctionBlock = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({
    name: Schema.String,
    description: Schema.String,
    parameters: described(Schema.Record(Schema.String, Schema.Unknown), "A JSON Schema of type object")
  }),
  defer_loading: Schema.optionalKey(Schema.Boolean),
  runner_executor_public_id: Schema.optionalKey(described(Schema.String, "An explicit runner route"))
})

/** A kernel tool by its catalog schema, named canonically. */
const KernelEntry = Schema.Struct({
  type: Schema.Literal("kernel"),
  name: described(Schema.String, "A canonical kernel tool name (svc.memory.read)"),
  defer_loading: Schema.optionalKey(Schema.Boolean)
})

const ApprovalRule = Schema.Struct({
  tool: described(Schema.String, "A tool name, an alternation such as a|b, or a name with a * suffix"),
  path: Schema.optionalKey(described(Schema.String, "A JSON pointer into the tool input")),
  match: Schema.optionalKey(Schema.String),
  verdict: Schema.Literals(["allow", "deny", "ask"]),
  reason: Schema.optionalKey(Schema.String),
  origin: Schema.optionalKey(described(Schema.Literals(["model", "hook", "any"]), "Absent: model-originated rows only"))
})

const PromptBlock = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: described(Schema.String, "{{variable}} takes a variable") }),
  Schema.Struct({
    type: Schema.Literal("section"),
    section: Schema.Literals(["system_prompt", "prompt_documents", "memory", "skills", "tools", "environment"])
  }),
  Schema.Struct({ type: Schema.Literal("prompt_document"), slot: Schema.String })
])

const CompactionPolicy = Schema.Struct({
  mode: Schema.Literals(["kernel", "delegate", "off"]),
  tool_name: Schema.optionalKey(described(Schema.String, "mode delegate only")),
  model: Schema.optionalKey(Schema.NullOr(described(Schema.String, "A provider/model reference"))),
  reasoning_enabled: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  reasoning_effort: Schema.optionalKey(Schema.NullOr(Schema.Literals(["minimal", "low", "medium", "high"])))
})

const LifecycleHook = Schema.optionalKey(
  Schema.Struct({ tool: Schema.String, input: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)) })
)

/**
 * An agent's declared configuration as read back (spec "Agent configuration"): every field null
 * and the tool list [] until declared; aliases show as the function blocks they expose.
 */
export const AgentConfiguration = Schema.Struct({
  tool_definitions: Schema.Array(Schema.Union([FunctionBlock, KernelEntry])),
  kernel_tools: Schema.NullOr(Schema.Array(described(Schema.String, "A canonical kernel tool name"))),
  runner_executor_public_ids: Schema.NullOr(Schema.Array(Schema.String)),
  runner_tool_names: Schema.NullOr(Schema.Array(Schema.String)),
  approval_mode: Schema.NullOr(Schema.Literals(["bypass", "ask", "rules"])),
  approval_rules: Schema.NullOr(Schema.Array(ApprovalRule)),
  prompt_mechanism: Schema.NullOr(Schema.Literals(["raw", "assembly", "default"])),
  prompt_template: Schema.NullOr(
    Schema.Struct({ blocks: Schema.Array(PromptBlock), variables: Schema.Record(Schema.String, Schema.String) })
  ),
  compaction_policy: Schema.NullOr(CompactionPolicy),
  lifecycle_hooks: Schema.NullOr(
    Schema.Struct({
      turn_start: LifecycleHook,
      pre_compact: LifecycleHook,
      post_compact: LifecycleHook,
      stop: LifecycleHook
    })
  ),
  memory_context_limit: Schema.NullOr(
    Schema.Struct({
      roots: Schema.NullOr(Schema.Array(Schema.Literals(["conversation", "workspace", "user", "agent", "speaker"]))),
      access: Schema.NullOr(Schema.Literals(["read", "read_write"]))
    })
  ),
  conversation_reach: Schema.NullOr(Schema.Literals(["workspace", "subtree"])),
  default_model: Schema.NullOr(described(Schema.String, "A provider/model reference")),
  fallback_models: Schema.NullOr(Schema.Array(Schema.String))
})

export const MemberProfile = Schema.Struct({
  member: Schema.Struct({
    public_id: Schema.String,
    handle: Schema.String,
    kind: Schema.Literals(["agent", "human"]),
    role: Schema.Literals(["owner", "admin", "member"]),
    display_name: Schema.String
  }),
  credential: Schema.Struct({ plane: Schema.Literal("member"), expires_at: Schema.NullOr(Schema.DateFromString) }),
  configuration: Schema.optionalKey(AgentConfiguration),
  measured_at: Schema.DateFromString
})

export class MemberProfileGroup extends HttpApiGroup.make("memberProfile")
  .add(
    HttpApiEndpoint.get("show", "/agent_api/v1/profile", { success: MemberProfile }).annotate(
      OpenApi.Description,
      "The calling member's profile."
    )
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: profile" })) {}
