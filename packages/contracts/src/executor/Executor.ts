// Executor plane: GET /agent_api/v1/executor, the address the transport credential speaks for
// (with the presence members of its discovery row).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, ContentTooLarge, Unprocessable } from "../Errors.ts"
import { ExecutorAuthentication } from "./Caller.ts"

export const EffectProfile = Schema.Struct({
  kind: Schema.Literals(["read_only", "pure", "write"]),
  destructive: Schema.Boolean,
  effect_scope: Schema.Literals(["closed", "open"]),
  idempotency: Schema.Literals(["intrinsic", "none"]),
  reconciliation: Schema.Literals(["none", "lookup"])
})

export const ServedTool = Schema.Struct({
  name: Schema.String,
  effect_profile: EffectProfile,
  timeout_ms: Schema.optionalKey(Schema.Number),
  description: Schema.optionalKey(Schema.String),
  input_schema: Schema.optionalKey(Schema.Unknown)
})

export const ServedDocument = Schema.Struct({ name: Schema.String, description: Schema.String })

export const Presence = Schema.Literals(["online", "offline", "not_yet_seen"])

export const Executor = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literals(["agent_application", "runner", "tool_provider"]),
  status: Schema.Literals(["active", "revoked"]),
  display_name: Schema.String,
  credential_epoch: Schema.Number,
  served_tools: Schema.Array(ServedTool),
  environment: Schema.NullOr(Schema.Unknown),
  served_documents: Schema.Array(ServedDocument),
  presence: Presence,
  last_seen_at: Schema.NullOr(Schema.String),
  connected_at: Schema.NullOr(Schema.String)
})

const ExecutorDescription = Schema.Struct({ executor: Executor, measured_at: Schema.String })

export class ExecutorGroup extends HttpApiGroup.make("executor")
  .add(
    HttpApiEndpoint.get("show", "/agent_api/v1/executor", { success: ExecutorDescription }),
    HttpApiEndpoint.put("announce", "/agent_api/v1/executor/announcement", {
      payload: Schema.Unknown,
      success: ExecutorDescription,
      error: [BadRequest, ContentTooLarge, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Whole replacement of served tools ({name, effect_profile, timeout_ms?, description?, input_schema?}), environment (object, at most 64 KiB) and documents ({name, description}); tools is required ([] clears)."
    )
  )
  .middleware(ExecutorAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Executor plane" })) {}
