// Member: handle renames. PATCH /agent_api/v1/principals/{public_id} with {principal: {handle}}
// (or {handle}): a human with a member credential renames itself or an agent it stewards. The
// spec names the rule, not the route (docs/decisions.md, "Named agents and handles").
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { MemberAuthentication } from "./Caller.ts"

/** The principals listing row: every key always present. */
export const PrincipalRow = Schema.Struct({
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  agent_identifier: Schema.NullOr(Schema.String),
  steward_public_id: Schema.NullOr(Schema.String)
})

export class PrincipalsGroup extends HttpApiGroup.make("principals")
  .add(
    HttpApiEndpoint.patch("rename", "/agent_api/v1/principals/:public_id", {
      params: { public_id: Schema.String },
      payload: Schema.Record(Schema.String, Schema.Unknown).annotate({
        description: "{principal: {handle}} (or {handle})"
      }),
      success: Schema.Struct({ principal: PrincipalRow }),
      error: [BadRequest, Forbidden, NotFound, Conflict, Unprocessable]
    })
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: principals (handle renames)" })) {}
