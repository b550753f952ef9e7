// Member: handle renames. PATCH /agent_api/v1/principals/{public_id} with {principal: {handle}}
// (or {handle}): a human with a member credential renames itself or an agent it stewards. The
// spec names the rule, not the route (docs/decisions.md, "Named agents and handles").
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { specCode } from "../Codes.ts"
import { BadRequest, Conflict, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"

/** A handle (spec "Member profile"): a string (else 400), of the grammar (else 422 validation_failed). */
export const Handle = Schema.String.annotate({ description: "[a-z0-9][a-z0-9_-]{1,31}" }).check(
  Schema.makeFilterGroup([
    Schema.isPattern(/^[a-z0-9][a-z0-9_-]{1,31}$/, {
      expected: "2 to 32 of a-z, 0-9, '_' or '-', starting with a letter or digit",
      [specCode]: "validation_failed"
    })
  ])
)

/** `{principal: {handle}}` or `{handle}`. */
export const RenamePrincipalBody = wrappedOrTopLevel("principal", Schema.Struct({ handle: Handle }))

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
      payload: RenamePrincipalBody,
      success: Schema.Struct({ principal: PrincipalRow }),
      error: [BadRequest, Forbidden, NotFound, Conflict, Unprocessable]
    }).annotate(OpenApi.Description, "Renames a principal's handle: {principal: {handle}}; 200 {principal}.")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: principals (handle renames)" })) {}
