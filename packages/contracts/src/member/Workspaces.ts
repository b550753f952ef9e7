// Member: workspaces (spec "Member: workspaces"; SUPPLEMENT "General shapes", "Workspace ownership
// and access"). Every command body is a schema whose wrapped form is canonical (the same members
// at top level are accepted), and a member whose fault the spec answers with its own code carries
// that code. What needs the database or the workspace's state (standing, the lock_version being
// current, a target's or provider's eligibility, a messaging agent's existence) is judged behind.
// Answers are the domain's workspace encoded by `Workspace`.
import { Schema, SchemaTransformation } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
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
import { LockVersion, LockVersionQuery } from "../LockVersion.ts"
import { Pagination } from "../Pagination.ts"
import { PublicId } from "../PublicId.ts"
import { canonicalBytes, isPrintableText } from "../Text.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"

const metadataLimitBytes = 2048
const messagingLimitBytes = 64 * 1024
/** Namespaces never overridden (422 reserved_namespace), and the one that may be. */
const reservedNamespaces = ["svc.graph", "svc.human", "svc.conversation", "svc.tools"]
const overridableNamespace = "svc.memory"

const AccessMode = Schema.Literals(["account_wide", "private"])

/** At most `limit` bytes of canonical JSON, else 413 content_too_large. */
const isWithinBytes = <T>(limit: number, what: string) =>
  Schema.makeFilter<T>(
    (value) => canonicalBytes(value) <= limit || `${what} is over ${limit / 1024} KiB of canonical JSON`,
    {
      expected: `at most ${limit / 1024} KiB of canonical JSON`,
      [specCode]: "content_too_large"
    }
  )

/** 1 to 255 printable characters, not all blank, read trimmed; any other value is 422 validation_failed. */
const WorkspaceName = Schema.String.annotate({ description: "1 to 255 printable characters, read trimmed" }).pipe(
  coded("validation_failed"),
  Schema.check(
    isPrintableText(1, 255, { [specCode]: "validation_failed" }),
    Schema.makeFilter<string>((name) => name.trim() !== "", {
      expected: "a name that is not blank",
      [specCode]: "validation_failed"
    })
  ),
  Schema.decodeTo(coded("validation_failed")(Schema.String), SchemaTransformation.trim())
)

/** A JSON object (else 422 validation_failed) of at most 2 KiB canonical JSON (else 413). */
const Metadata = Schema.Record(Schema.String, Schema.Unknown).pipe(
  coded("validation_failed"),
  Schema.check(isWithinBytes(metadataLimitBytes, "metadata"))
)

export const Workspace = Schema.Struct({
  public_id: Schema.String,
  name: Schema.String,
  access_mode: AccessMode,
  metadata: Schema.Record(Schema.String, Schema.Unknown),
  lock_version: Schema.Natural,
  state: Schema.Literals(["active", "archiving", "archived", "restoring", "tombstoned"]),
  archived_at: Schema.NullOr(Schema.Date).annotate({
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
  tool_provider_overrides: Schema.Record(Schema.String, Schema.String).annotate({
    description: "namespace → tool provider public_id"
  }),
  created_at: Schema.Date,
  updated_at: Schema.Date
})

export const Principal = Schema.Struct({
  public_id: Schema.String,
  handle: Schema.String,
  kind: Schema.Literals(["human", "agent"]),
  display_name: Schema.String,
  agent_identifier: Schema.NullOr(Schema.String),
  steward_public_id: Schema.NullOr(Schema.String)
})

const MessagingMode = Schema.Literals(["public", "private"])

export const Messaging = Schema.Struct({
  agents: Schema.Array(
    Schema.Struct({
      agent_public_id: Schema.String,
      mode: MessagingMode,
      allowed_sender_public_ids: Schema.Array(Schema.String)
    })
  ),
  lock_version: Schema.Natural
})

export const MessagingResponse = Schema.Struct({ messaging: Messaging })

export const OverridesResponse = Schema.Struct({
  tool_provider_overrides: Schema.Struct({
    overrides: Schema.Record(Schema.String, Schema.String),
    lock_version: Schema.Natural
  })
})

/** `{workspace: {name, access_mode?, metadata?}}`; null access_mode or metadata is the default. */
export const CreateWorkspaceBody = wrappedOrTopLevel(
  "workspace",
  Schema.Struct({
    name: WorkspaceName,
    access_mode: Schema.optionalKey(
      Schema.NullOr(coded("validation_failed")(AccessMode)).pipe(coded("validation_failed"))
    ).annotate({ description: "private (default) or account_wide; an agent's create is always private" }),
    metadata: Schema.optionalKey(Schema.NullOr(Metadata).pipe(coded("validation_failed"))).annotate({
      description: "a JSON object (default {})"
    })
  })
)

/** `{workspace: {lock_version, name?, metadata?}}` with name or metadata (else 400 parameter_missing). */
export const PatchWorkspaceBody = wrappedOrTopLevel(
  "workspace",
  Schema.Struct({
    lock_version: LockVersion,
    name: Schema.optionalKey(WorkspaceName),
    metadata: Schema.optionalKey(Metadata)
  }).check(
    Schema.makeFilterGroup([
      Schema.makeFilter((members) => members.name !== undefined || members.metadata !== undefined, {
        expected: "name or metadata beside lock_version",
        [specCode]: "parameter_missing"
      })
    ])
  )
)

/** `{access_mode: {access_mode, lock_version}}` (owner only). */
export const AccessModeBody = wrappedOrTopLevel(
  "access_mode",
  Schema.Struct({ lock_version: LockVersion, access_mode: coded("validation_failed")(AccessMode) })
)

/** `{ownership_transfer: {target_user_public_id, lock_version}}`: the target is an active human of the account. */
export const OwnershipTransferBody = wrappedOrTopLevel(
  "ownership_transfer",
  Schema.Struct({ lock_version: LockVersion, target_user_public_id: PublicId })
)

/** `{command: {lock_version}}`: archival and restoration. */
export const LifecycleCommandBody = wrappedOrTopLevel("command", Schema.Struct({ lock_version: LockVersion }))

/**
 * A public id inside a policy entry, whose every fault is 422 validation_failed. Read lowercase
 * (public ids are answered lowercase), so one agent sent in two cases is one agent repeated.
 */
const EntryId = Schema.String.pipe(
  coded("validation_failed"),
  Schema.check(Schema.isGUID({ [specCode]: "validation_failed" })),
  Schema.decodeTo(Schema.String, SchemaTransformation.toLowerCase())
)

/** A policy entry as sent (every fault 422 validation_failed): mode defaults to public, allowed_sender_public_ids to []. */
const MessagingEntry = Schema.Struct({
  agent_public_id: EntryId,
  mode: Schema.optionalKey(coded("validation_failed")(MessagingMode)),
  allowed_sender_public_ids: Schema.optionalKey(Schema.Array(EntryId).pipe(coded("validation_failed")))
}).pipe(coded("validation_failed"))

const MessagingAgents = Schema.Array(MessagingEntry).check(
  Schema.makeFilterGroup([
    Schema.makeFilter<ReadonlyArray<{ readonly agent_public_id: string }>>(
      (entries) => {
        const index = entries.findIndex(
          (entry, at) => entries.findIndex((other) => other.agent_public_id === entry.agent_public_id) !== at
        )
        return index < 0 || { path: [index], issue: "repeats an agent" }
      },
      { expected: "each agent at most once", [specCode]: "validation_failed" }
    ),
    isWithinBytes(messagingLimitBytes, "The messaging policy")
  ])
)

/** The read shape `{messaging: {agents, lock_version}}`, replaced whole. */
export const ReplaceMessagingBody = wrappedOrTopLevel(
  "messaging",
  Schema.Struct({ lock_version: LockVersion, agents: MessagingAgents })
)

/** Namespaces in the spec's order: reserved ones (422 reserved_namespace), then any other but svc.memory. */
const Overrides = Schema.Record(
  Schema.String,
  Schema.Unknown.annotate({ description: "a tool provider's public_id" })
).check(
  Schema.makeFilterGroup([
    Schema.makeFilter<Readonly<Record<string, unknown>>>(
      (overrides) => {
        const reserved = Object.keys(overrides).find((namespace) => reservedNamespaces.includes(namespace))
        return reserved === undefined || { path: [reserved], issue: `${reserved} is reserved and never overridden` }
      },
      { expected: "no reserved namespace", [specCode]: "reserved_namespace" }
    ),
    Schema.makeFilter<Readonly<Record<string, unknown>>>(
      (overrides) => {
        const other = Object.keys(overrides).find((namespace) => namespace !== overridableNamespace)
        return other === undefined || { path: [other], issue: `only ${overridableNamespace} may be overridden` }
      },
      { expected: `only ${overridableNamespace}`, [specCode]: "validation_failed" }
    )
  ])
)

/** `{tool_provider_overrides: {overrides: {namespace: provider public_id}, lock_version}}`; {} clears. */
export const ReplaceOverridesBody = wrappedOrTopLevel(
  "tool_provider_overrides",
  Schema.Struct({ overrides: Overrides, lock_version: LockVersion })
)

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
    }).annotate(
      OpenApi.Description,
      "Workspaces the caller can see: state live (default) or archived; for an agent, dedicated_to_current_agent picks undedicated (default) or its dedicated ones. Keyset-paginated."
    ),
    HttpApiEndpoint.get("read", "/agent_api/v1/workspaces/:workspace_id", {
      params: id,
      success: one,
      error: errors
    }).annotate(OpenApi.Description, "One workspace: 200 {workspace}."),
    HttpApiEndpoint.patch("patch", "/agent_api/v1/workspaces/:workspace_id", {
      params: id,
      payload: PatchWorkspaceBody,
      success: one,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{workspace: {lock_version, name?, metadata?}}: 200 {workspace}; a stale lock_version is 409."
    ),
    HttpApiEndpoint.put("accessMode", "/agent_api/v1/workspaces/:workspace_id/access_mode", {
      params: id,
      payload: AccessModeBody,
      success: one,
      error: errors
    }).annotate(OpenApi.Description, "{access_mode: {access_mode, lock_version}}: sets private or account_wide."),
    HttpApiEndpoint.post("ownershipTransfer", "/agent_api/v1/workspaces/:workspace_id/ownership_transfer", {
      params: id,
      payload: OwnershipTransferBody,
      success: one,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{ownership_transfer: {target_user_public_id, lock_version}}; the target is an active human of the account."
    ),
    HttpApiEndpoint.post("archival", "/agent_api/v1/workspaces/:workspace_id/archival", {
      params: id,
      payload: LifecycleCommandBody,
      success: one,
      error: errors
    }).annotate(OpenApi.Description, "Archives the workspace: {command: {lock_version}}."),
    HttpApiEndpoint.post("restoration", "/agent_api/v1/workspaces/:workspace_id/restoration", {
      params: id,
      payload: LifecycleCommandBody,
      success: one,
      error: errors
    }).annotate(OpenApi.Description, "Restores an archived workspace: {command: {lock_version}}."),
    HttpApiEndpoint.delete("delete", "/agent_api/v1/workspaces/:workspace_id", {
      params: id,
      query: { lock_version: LockVersionQuery },
      success: one,
      error: errors
    }).annotate(OpenApi.Description, "Tombstones the workspace at ?lock_version=."),
    HttpApiEndpoint.get("messaging", "/agent_api/v1/workspaces/:workspace_id/messaging", {
      params: id,
      success: MessagingResponse,
      error: errors
    }).annotate(OpenApi.Description, "The workspace's agent messaging settings: 200 {messaging}."),
    HttpApiEndpoint.put("replaceMessaging", "/agent_api/v1/workspaces/:workspace_id/messaging", {
      params: id,
      payload: ReplaceMessagingBody,
      success: MessagingResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "Whole replacement of the messaging settings, in the read shape; agents and lock_version required."
    ),
    HttpApiEndpoint.put("overrides", "/agent_api/v1/workspaces/:workspace_id/tool_provider_overrides", {
      params: id,
      payload: ReplaceOverridesBody,
      success: OverridesResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{tool_provider_overrides: {overrides: {namespace: provider public_id}, lock_version}}; {} clears. 422 reserved_namespace, validation_failed, provider_not_eligible or provider_incomplete."
    ),
    HttpApiEndpoint.get("principals", "/agent_api/v1/workspaces/:workspace_id/principals", {
      params: id,
      success: Schema.Struct({ principals: Schema.Array(Principal) }),
      error: errors
    }).annotate(OpenApi.Description, "The workspace's principals by display name, unpaginated: 200 {principals}.")
  )
  .middleware(MemberAuthentication)
  .add(
    HttpApiEndpoint.post("create", "/agent_api/v1/workspaces", {
      headers: IdempotencyKeyHeader,
      payload: CreateWorkspaceBody,
      success: one.pipe(HttpApiSchema.status(201)),
      error: [...errors, RateLimitedResponse]
    })
      .middleware(Idempotent)
      .middleware(MemberAuthentication)
      .annotate(OpenApi.Description, "Header Idempotency-Key (1 to 255 bytes). 201; a replay answers verbatim.")
  )
  .annotateMerge(OpenApi.annotations({ title: "Member: workspaces" })) {}
