// Member: the kernel tool catalog (runs supplement "Tool catalog, default runner, run inputs").
// GET /agent_api/v1/tools lists the service's own tools by canonical name, each with its wire
// name, effect profile, description template and function definition. Any member credential.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { EffectProfile } from "../executor/Executor.ts"
import { MemberAuthentication } from "./Caller.ts"

/** A tool's input as JSON Schema: an object of named members, some required. */
export const ToolParameters = Schema.Struct({
  type: Schema.Literal("object"),
  properties: Schema.Record(Schema.String, Schema.Unknown),
  required: Schema.Array(Schema.String)
})

/** What a model is offered: the wire name, the rendered description and the parameters. */
export const ToolDefinition = Schema.Struct({
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, description: Schema.String, parameters: ToolParameters })
})

export const CatalogTool = Schema.Struct({
  /** `svc.<area>.<verb>`: the name agent configuration's kernel_tools takes. */
  canonical_name: Schema.String,
  /** The wire name models and approval rules see (= definition.function.name). */
  name: Schema.String,
  effect_profile: EffectProfile,
  definition: ToolDefinition,
  /** The description with `{{<wire name>}}` wherever it names another catalog tool. */
  template: Schema.String
})

export class ToolsGroup extends HttpApiGroup.make("tools")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/tools", {
      success: Schema.Struct({ tools: Schema.Array(CatalogTool) })
    }).annotate(
      OpenApi.Description,
      "The kernel tool catalog by canonical_name: 200 {tools: [{canonical_name, name, effect_profile, definition, template}]}."
    )
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: tools" })) {}
