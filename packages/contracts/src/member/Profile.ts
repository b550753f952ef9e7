// Member: profile. GET /agent_api/v1/profile (spec "Member profile").
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { MemberAuthentication } from "./Caller.ts"

export const AgentConfiguration = Schema.Struct({
  tool_definitions: Schema.Array(Schema.Unknown),
  kernel_tools: Schema.NullOr(Schema.Array(Schema.String)),
  runner_executor_public_ids: Schema.NullOr(Schema.Array(Schema.String)),
  runner_tool_names: Schema.NullOr(Schema.Array(Schema.String)),
  approval_mode: Schema.NullOr(Schema.String),
  approval_rules: Schema.NullOr(Schema.Array(Schema.Unknown)),
  prompt_mechanism: Schema.NullOr(Schema.String),
  prompt_template: Schema.NullOr(Schema.Unknown),
  compaction_policy: Schema.NullOr(Schema.Unknown),
  lifecycle_hooks: Schema.NullOr(Schema.Unknown),
  memory_context_limit: Schema.NullOr(Schema.Unknown),
  conversation_reach: Schema.NullOr(Schema.String),
  default_model: Schema.NullOr(Schema.String),
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
  credential: Schema.Struct({ plane: Schema.Literal("member"), expires_at: Schema.NullOr(Schema.String) }),
  configuration: Schema.optionalKey(AgentConfiguration),
  measured_at: Schema.String
})

export class MemberProfileGroup extends HttpApiGroup.make("memberProfile")
  .add(HttpApiEndpoint.get("show", "/agent_api/v1/profile", { success: MemberProfile }))
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: profile" })) {}
