// Member: executors discovery (the executor plane's discovery routes take a member credential).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../Errors.ts"
import { ServedDocument, ServedTool } from "../executor/Executor.ts"
import { MemberAuthentication } from "./Caller.ts"

export const DiscoveredExecutor = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literals(["runner", "tool_provider"]),
  status: Schema.Literals(["active", "revoked"]),
  display_name: Schema.String,
  credential_epoch: Schema.Number,
  assignment_scope: Schema.Literals(["agent_private", "user_private", "account_wide"]),
  assignment_agent_public_id: Schema.NullOr(Schema.String),
  served_tools: Schema.Array(ServedTool),
  environment: Schema.NullOr(Schema.Unknown),
  served_documents: Schema.Array(ServedDocument),
  presence: Schema.Literals(["online", "offline", "not_yet_seen"]),
  last_seen_at: Schema.NullOr(Schema.String),
  connected_at: Schema.NullOr(Schema.String)
})

export class ExecutorsGroup extends HttpApiGroup.make("executors")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/executors", {
      query: { kind: Schema.optional(Schema.String) },
      success: Schema.Struct({ executors: Schema.Array(DiscoveredExecutor) }),
      error: BadRequest
    }),
    HttpApiEndpoint.get("show", "/agent_api/v1/executors/:public_id", {
      params: { public_id: Schema.String },
      success: Schema.Struct({ executor: DiscoveredExecutor }),
      error: NotFound
    })
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: executors discovery" })) {}
