// Executor plane: GET /agent_api/v1/executor, the address the transport credential speaks for.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { ExecutorAuthentication } from "./Caller.ts"

export const Executor = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literals(["agent_application", "runner", "tool_provider"]),
  status: Schema.Literals(["active", "revoked"]),
  display_name: Schema.String,
  credential_epoch: Schema.Number
})

export class ExecutorGroup extends HttpApiGroup.make("executor")
  .add(
    HttpApiEndpoint.get("show", "/agent_api/v1/executor", {
      success: Schema.Struct({ executor: Executor, measured_at: Schema.String })
    })
  )
  .middleware(ExecutorAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Executor plane" })) {}
