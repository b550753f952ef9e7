// Member: named agent definitions (spec "Named agent definition", "Member: profile and named
// agents"). A {name} of another shape than the name grammar is a plain route miss (404, like an
// unknown route): the NamedAgentName middleware wraps authentication and answers it first; a
// human caller is refused (403 not_agent) after authentication, before the body is read. The PUT
// body is read in two stages so a missing or mistyped member (400) is judged before a value
// outside its vocabulary or bounds (422 validation_failed naming it); the configuration's own
// rules are the domain's.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiMiddleware, HttpApiSchema, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { codePointLength, isPrintable, isPrintableText } from "../Text.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { type CurrentMemberCaller, MemberAuthentication } from "./Caller.ts"
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

/**
 * A PUT's answer, `{agent}` on the wire at 201 when the name was new and at 200 when a definition
 * was replaced or restored. `created` is the status, not a member: the server picks the schema
 * by it, and the client reads it back from the status.
 */
const putAnswer = <const Created extends boolean>(created: Created) =>
  NamedAgentResponse.pipe(
    Schema.decodeTo(
      Schema.Struct({ agent: Schema.toType(NamedAgentDefinition), created: Schema.Literal(created) }),
      SchemaTransformation.transform({
        decode: (answer) => ({ ...answer, created }),
        encode: ({ agent }) => ({ agent })
      })
    ),
    HttpApiSchema.status(created ? 201 : 200)
  )

/** Spec "Limits": a description is one printable line, a system prompt at most 64 KiB. */
const limits = { description: 1024, displayName: 100, systemPromptBytes: 64 * 1024 } as const

/** The members' JSON types: absent or mistyped is 400, judged before any value. */
const DefinitionShape = Schema.Struct({
  create_only: Schema.optionalKey(Schema.Boolean).annotate({
    description: "a JSON boolean; true refuses an existing name (409 name_taken)"
  }),
  scope: Schema.String.annotate({ description: "instance or steward" }),
  description: Schema.String.annotate({ description: `one printable line of 1 to ${limits.description} characters` }),
  configuration: Schema.Record(Schema.String, Schema.Unknown).annotate({
    description: 'the agent configuration (spec "Agent configuration"), replaced whole'
  }),
  display_name: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({
    description: `1 to ${limits.displayName} printable characters (default: the name)`
  }),
  system_prompt: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({ description: "at most 64 KiB" })
})

/** Printable, and 1 to 100 characters once trimmed (judged before trimming, which would drop a U+FEFF). */
const DisplayName = Schema.String.check(
  Schema.makeFilter<string>(
    (name) => {
      const length = isPrintable(name) ? codePointLength(name.trim()) : -1
      return length >= 1 && length <= limits.displayName
    },
    { expected: `1 to ${limits.displayName} printable characters`, [specCode]: "validation_failed" }
  )
).pipe(Schema.decodeTo(Schema.String, SchemaTransformation.trim()))

/** The values: each outside its vocabulary or bounds is 422 validation_failed naming it. */
const DefinitionValues = Schema.Struct({
  create_only: Schema.optionalKey(Schema.Boolean),
  scope: coded("validation_failed")(Schema.Literals(["instance", "steward"])),
  description: Schema.String.check(isPrintableText(1, limits.description, { [specCode]: "validation_failed" })),
  configuration: Schema.Record(Schema.String, Schema.Unknown),
  display_name: Schema.optionalKey(Schema.NullOr(DisplayName).pipe(coded("validation_failed"))),
  system_prompt: Schema.optionalKey(
    Schema.NullOr(
      Schema.String.check(
        Schema.makeFilter<string>((prompt) => new TextEncoder().encode(prompt).length <= limits.systemPromptBytes, {
          expected: "at most 64 KiB",
          [specCode]: "validation_failed"
        })
      )
    ).pipe(coded("validation_failed"))
  )
})

/** `{agent: {scope, description, configuration, display_name?, system_prompt?, create_only?}}` or the members at top level. */
export const PutNamedAgentBody = wrappedOrTopLevel(
  "agent",
  DefinitionShape.pipe(Schema.decodeTo(DefinitionValues, SchemaTransformation.passthroughSupertype()))
)

const namePath = "/agent_api/v1/profile/agents/:name"

/** Answers a {name} outside [a-z0-9][a-z0-9_-]{1,31} exactly as the router answers an unknown route. */
export class NamedAgentName extends HttpApiMiddleware.Service<NamedAgentName>()(
  "@troupe/contracts/member/NamedAgentName"
) {}

/** Refuses a caller that is not an agent (403 not_agent): after authentication, before the body is read. */
export class AgentCaller extends HttpApiMiddleware.Service<AgentCaller, { requires: CurrentMemberCaller }>()(
  "@troupe/contracts/member/AgentCaller",
  { error: Forbidden }
) {}
const params = { name: Schema.String }

export class NamedAgentsGroup extends HttpApiGroup.make("namedAgents")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/profile/agents", {
      success: Schema.Struct({ agents: Schema.Array(NamedAgentDefinition) }),
      error: Forbidden
    }).annotate(
      OpenApi.Description,
      "The caller's own active named agents of both scopes plus its steward's other published ones, by display name: 200 {agents}."
    ),
    HttpApiEndpoint.get("show", namePath, {
      params,
      success: NamedAgentResponse,
      error: [Forbidden, NotFound]
    }).annotate(OpenApi.Description, "One named agent of the caller: 200 {agent}."),
    HttpApiEndpoint.put("put", namePath, {
      params,
      payload: PutNamedAgentBody,
      success: [putAnswer(true), putAnswer(false)],
      error: [BadRequest, Forbidden, Conflict, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Whole replacement of a named agent: 201 when minted, 200 when replaced or restored, answering {agent}. create_only true refuses an existing one."
    ),
    HttpApiEndpoint.delete("remove", namePath, { params, error: [Forbidden, NotFound] }).annotate(
      OpenApi.Description,
      "Retires the named agent (a reversible status flip): 204."
    )
  )
  .middleware(AgentCaller)
  .middleware(MemberAuthentication)
  .middleware(NamedAgentName)
  .annotateMerge(OpenApi.annotations({ title: "Member: named agents" })) {}
