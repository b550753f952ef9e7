// Member: executors discovery (the executor plane's discovery routes take a member credential).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, NotFound } from "../Errors.ts"
import { executorMembers } from "../executor/Executor.ts"
import { MemberAuthentication } from "./Caller.ts"

/** An address as discovery shows it: the executor's own view's members with its assignment. */
export const DiscoveredExecutor = Schema.Struct({
  ...executorMembers,
  kind: Schema.Literals(["runner", "tool_provider"]),
  assignment_scope: Schema.Literals(["agent_private", "user_private", "account_wide"]),
  assignment_agent_public_id: Schema.NullOr(Schema.String)
})

export class ExecutorsGroup extends HttpApiGroup.make("executors")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/executors", {
      query: { kind: Schema.optional(Schema.Literals(["runner", "tool_provider"])) },
      success: Schema.Struct({ executors: Schema.Array(DiscoveredExecutor) }),
      error: BadRequest
    }).annotate(
      OpenApi.Description,
      "Executors the caller may use; kind runner or tool_provider filters (another value is 400 parameter_invalid). 200 {executors}."
    ),
    HttpApiEndpoint.get("show", "/agent_api/v1/executors/:public_id", {
      params: { public_id: Schema.String },
      success: Schema.Struct({ executor: DiscoveredExecutor }),
      error: NotFound
    }).annotate(OpenApi.Description, "One executor: 200 {executor}; ineligible or unknown is 404.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: executors discovery" })) {}
