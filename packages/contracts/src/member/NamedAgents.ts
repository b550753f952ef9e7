// Member: named agent definitions (spec "Named agent definition", "Member: profile and named
// agents"). A {name} of another shape than the name grammar is a plain route miss (404, like an
// unknown route): the NamedAgentName middleware wraps authentication and answers it first.
// Bodies are read by the handler so it can tell a missing or mistyped member (400) from a value
// outside its vocabulary (422).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { MemberAuthentication } from "./Caller.ts"
import { AgentConfiguration } from "./Profile.ts"

export const NamedAgentDefinition = Schema.Struct({
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literal("agent"),
  display_name: Schema.String,
  agent_identifier: Schema.String,
  steward_public_id: Schema.String,
  scope: Schema.Literals(["instance", "steward"]),
  name: Schema.String,
  description: Schema.String,
  derived_from_public_id: Schema.String,
  system_prompt: Schema.NullOr(Schema.String),
  configuration: AgentConfiguration
})

export const NamedAgentResponse = Schema.Struct({ agent: NamedAgentDefinition })

/** `{scope, description, configuration, display_name?, system_prompt?, create_only?}`, or under `agent`. */
export const PutNamedAgentPayload = Schema.Record(Schema.String, Schema.Unknown).annotate({
  description:
    "{scope: instance|steward, description, configuration, display_name?, system_prompt?, create_only?} " +
    "(the same members under `agent` are accepted too)"
})

const namePath = "/agent_api/v1/profile/agents/:name"

/** Answers a {name} outside [a-z0-9][a-z0-9_-]{1,31} exactly as the router answers an unknown route. */
export class NamedAgentName extends HttpApiMiddleware.Service<NamedAgentName>()(
  "@troupe/contracts/member/NamedAgentName"
) {}
const params = { name: Schema.String }

export class NamedAgentsGroup extends HttpApiGroup.make("namedAgents")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/profile/agents", {
      success: Schema.Struct({ agents: Schema.Array(NamedAgentDefinition) }),
      error: Forbidden
    }),
    HttpApiEndpoint.get("show", namePath, { params, success: NamedAgentResponse, error: [Forbidden, NotFound] }),
    HttpApiEndpoint.put("put", namePath, {
      params,
      payload: PutNamedAgentPayload,
      success: [NamedAgentResponse.pipe(HttpApiSchema.status(201)), NamedAgentResponse],
      error: [BadRequest, Forbidden, Conflict, Unprocessable]
    }),
    HttpApiEndpoint.delete("remove", namePath, { params, error: [Forbidden, NotFound] })
  )
  .middleware(MemberAuthentication)
  .middleware(NamedAgentName)
  .annotateMerge(OpenApi.annotations({ title: "Member: named agents" })) {}
