// Member: workspaces (spec "Member: workspaces"). Bodies are read leniently (the wrapped form is
// canonical; the same members at top level are accepted) and judged by the handlers, so every
// fault answers the spec's code.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  BadRequest,
  Conflict,
  ContentTooLarge,
  Forbidden,
  NotFound,
  RateLimitedResponse,
  Unprocessable
} from "../Errors.ts"
import { IdempotencyKeyHeader, Idempotent } from "../Idempotency.ts"
import { Pagination } from "../Pagination.ts"
import { MemberAuthentication } from "./Caller.ts"

export const Workspace = Schema.Struct({
  public_id: Schema.String,
  name: Schema.String,
  access_mode: Schema.Literals(["account_wide", "private"]),
  metadata: Schema.Unknown,
  lock_version: Schema.Number,
  state: Schema.Literals(["active", "archiving", "archived", "restoring", "tombstoned"]),
  archived_at: Schema.NullOr(Schema.String).annotate({
    description: "The instant archival was accepted; null while live (restoration clears it)"
  }),
  owner_public_id: Schema.String,
  owner: Schema.Struct({ public_id: Schema.String, display_name: Schema.String }).annotate({
    description: "The owner, always a human"
  }),
  creator: Schema.Struct({
    public_id: Schema.String,
    display_name: Schema.String,
    kind: Schema.Literals(["human", "agent"])
  }).annotate({ description: "The principal that created the workspace" }),
  tool_provider_overrides: Schema.Unknown,
  created_at: Schema.String,
  updated_at: Schema.String
})

export const Principal = Schema.Struct({
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  agent_identifier: Schema.NullOr(Schema.String),
  steward_public_id: Schema.NullOr(Schema.String)
})

export const Messaging = Schema.Struct({
  agents: Schema.Array(
    Schema.Struct({
      agent_public_id: Schema.String,
      mode: Schema.Literals(["public", "private"]),
      allowed_sender_public_ids: Schema.Array(Schema.String)
    })
  ),
  lock_version: Schema.Number
})

const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]
const id = { workspace_id: Schema.String }
const one = Schema.Struct({ workspace: Workspace })

export class WorkspacesGroup extends HttpApiGroup.make("workspaces")
  .add(
    HttpApiEndpoint.get("list", "/agent_api/v1/workspaces", {
      query: {
        state: Schema.optional(Schema.String),
        dedicated_to_current_agent: Schema.optional(Schema.String),
        after: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.String),
        order: Schema.optional(Schema.String)
      },
      success: Schema.Struct({ workspaces: Schema.Array(Workspace), pagination: Pagination }),
      error: errors
    }),
    HttpApiEndpoint.get("read", "/agent_api/v1/workspaces/:workspace_id", { params: id, success: one, error: errors }),
    HttpApiEndpoint.patch("patch", "/agent_api/v1/workspaces/:workspace_id", {
      params: id,
      payload: Schema.Unknown,
      success: one,
      error: errors
    }),
    HttpApiEndpoint.put("accessMode", "/agent_api/v1/workspaces/:workspace_id/access_mode", {
      params: id,
      payload: Schema.Unknown,
      success: one,
      error: errors
    }),
    HttpApiEndpoint.post("ownershipTransfer", "/agent_api/v1/workspaces/:workspace_id/ownership_transfer", {
      params: id,
      payload: Schema.Unknown,
      success: one,
      error: errors
    }),
    HttpApiEndpoint.post("archival", "/agent_api/v1/workspaces/:workspace_id/archival", {
      params: id,
      payload: Schema.Unknown,
      success: one,
      error: errors
    }),
    HttpApiEndpoint.post("restoration", "/agent_api/v1/workspaces/:workspace_id/restoration", {
      params: id,
      payload: Schema.Unknown,
      success: one,
      error: errors
    }),
    HttpApiEndpoint.delete("delete", "/agent_api/v1/workspaces/:workspace_id", {
      params: id,
      query: { lock_version: Schema.optional(Schema.String) },
      success: one,
      error: errors
    }),
    HttpApiEndpoint.get("messaging", "/agent_api/v1/workspaces/:workspace_id/messaging", {
      params: id,
      success: Schema.Struct({ messaging: Messaging }),
      error: errors
    }),
    HttpApiEndpoint.put("replaceMessaging", "/agent_api/v1/workspaces/:workspace_id/messaging", {
      params: id,
      payload: Schema.Unknown,
      success: Schema.Struct({ messaging: Messaging }),
      error: errors
    }),
    HttpApiEndpoint.put("overrides", "/agent_api/v1/workspaces/:workspace_id/tool_provider_overrides", {
      params: id,
      payload: Schema.Unknown,
      success: Schema.Struct({
        tool_provider_overrides: Schema.Struct({ overrides: Schema.Unknown, lock_version: Schema.Number })
      }),
      error: errors
    }),
    HttpApiEndpoint.get("principals", "/agent_api/v1/workspaces/:workspace_id/principals", {
      params: id,
      success: Schema.Struct({ principals: Schema.Array(Principal) }),
      error: errors
    })
  )
  .middleware(MemberAuthentication)
  .add(
    HttpApiEndpoint.post("create", "/agent_api/v1/workspaces", {
      headers: IdempotencyKeyHeader,
      payload: Schema.Unknown,
      success: one.pipe(HttpApiSchema.status(201)),
      error: [...errors, RateLimitedResponse]
    })
      .middleware(Idempotent)
      .middleware(MemberAuthentication)
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key (1 to 255 bytes). Body {workspace: {name, access_mode?, metadata?}}."
      )
  )
  .annotateMerge(OpenApi.annotations({ title: "Member: workspaces" })) {}
