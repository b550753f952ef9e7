// Member: conversations (spec "Conversation", "Member: conversations"; supplement conversations.md
// "Conversation", "Access, default runner, messaging, memory, store", "Forks and sides", "Feed").
// Bodies are read in two passes (ConversationShapes `judged`): JSON types answer 400, then
// vocabularies and bounds their own codes (a level 422 validation_failed, metadata over 2 KiB 413,
// a billing subject over 255 characters 422 billing_subject_too_long). What needs the database
// (who may be named, an answerer's or a runner's eligibility, the lock_version being current, "title
// or metadata" beside lock_version) is judged behind. List filters are strings the domain reads.
import { Schema } from "effect"
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
import { LockVersion } from "../LockVersion.ts"
import { PageQuery, Pagination } from "../Pagination.ts"
import { PublicId } from "../PublicId.ts"
import { canonicalBytes, codePointLength } from "../Text.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import {
  accessLevels,
  ConversationResponse,
  ConversationSummary,
  FeedItem,
  judged,
  optionalBody,
  vocabulary
} from "./ConversationShapes.ts"
import { memoryScopes } from "./MemoryMembers.ts"

const metadataLimitBytes = 2048
const bindingLimit = 16
const bindingName = /^[a-z][a-z0-9_-]{0,31}$/

/** A JSON object (else 422 validation_failed) of at most 2 KiB canonical JSON (else 413). */
const Metadata = Schema.Record(Schema.String, Schema.Unknown).pipe(
  coded("validation_failed"),
  Schema.check(
    Schema.makeFilter<Readonly<Record<string, unknown>>>(
      (metadata) => canonicalBytes(metadata) <= metadataLimitBytes || "metadata is over 2 KiB of canonical JSON",
      { expected: "at most 2 KiB of canonical JSON", [specCode]: "content_too_large" }
    )
  )
)

/** Null or 1 to 255 characters (else 422 billing_subject_too_long). */
const BillingSubject = Schema.NullOr(
  Schema.String.check(
    Schema.makeFilter<string>((subject) => codePointLength(subject) >= 1 && codePointLength(subject) <= 255, {
      expected: "1 to 255 characters",
      [specCode]: "billing_subject_too_long"
    })
  )
)

/** A memory binding's JSON types (spec "Memory binding"). */
const BindingShape = Schema.Struct({
  name: Schema.String,
  scope: Schema.String,
  access: Schema.String,
  conversation_public_id: Schema.optionalKey(Schema.NullOr(PublicId)),
  speaker_public_id: Schema.optionalKey(Schema.NullOr(PublicId))
})

const MemoryContextShape = Schema.Struct({ bindings: Schema.Array(BindingShape) })

type Bindings = ReadonlyArray<{
  readonly name: string
  readonly scope: string
  readonly conversation_public_id?: string | null
}>

const bindingRule = (
  rule: (bindings: Bindings) => boolean | { path: [number, string]; issue: string },
  expected: string
) => Schema.makeFilter<Bindings>(rule, { expected, [specCode]: "validation_failed" })

/** The bindings' values and the set's rules, each fault 422 validation_failed. */
const MemoryContextValues = Schema.Struct({
  bindings: Schema.Array(
    Schema.Struct({
      name: Schema.String.check(
        Schema.isPattern(bindingName, { expected: "a name of [a-z][a-z0-9_-]{0,31}", [specCode]: "validation_failed" })
      ),
      scope: vocabulary(memoryScopes),
      access: vocabulary(["read", "read_write"]),
      conversation_public_id: BindingShape.fields.conversation_public_id,
      speaker_public_id: BindingShape.fields.speaker_public_id
    })
  ).check(
    Schema.makeFilterGroup([
      bindingRule((bindings) => bindings.length <= bindingLimit, `at most ${bindingLimit} bindings`),
      bindingRule((bindings) => {
        const index = bindings.findIndex((binding, at) => bindings.findIndex((o) => o.name === binding.name) !== at)
        return index < 0 || { path: [index, "name"], issue: "repeats a binding's name" }
      }, "each name at most once"),
      bindingRule(
        (bindings) =>
          bindings.length === 0 ||
          bindings.some((binding) => binding.scope === "conversation" && !binding.conversation_public_id),
        "a conversation binding (scope conversation, no conversation_public_id) in a nonempty set"
      )
    ])
  )
})

/** `{bindings: [{name, scope, access, conversation_public_id?, speaker_public_id?}]}` (at most 16). */
export const MemoryContextMembers = judged(MemoryContextShape, MemoryContextValues)
export type MemoryContextMembers = typeof MemoryContextMembers.Type

/** An access entry names its principal by user_public_id or by handle (`@name` or `name`). */
const AccessEntryShape = Schema.Struct({
  user_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  handle: Schema.optionalKey(Schema.NullOr(Schema.String)),
  level: Schema.String
})

const AccessShape = Schema.Struct({
  default: Schema.String,
  entries: Schema.optionalKey(Schema.NullOr(Schema.Array(AccessEntryShape)))
})

const AccessValues = Schema.Struct({
  default: vocabulary(accessLevels),
  entries: Schema.optionalKey(
    Schema.NullOr(
      Schema.Array(
        Schema.Struct({
          user_public_id: AccessEntryShape.fields.user_public_id,
          handle: AccessEntryShape.fields.handle,
          level: vocabulary(accessLevels)
        })
      )
    )
  )
})

/** `{default, entries?}`: levels full, read or none; who may be named (422 principal_not_eligible) is the domain's. */
export const AccessMembers = judged(AccessShape, AccessValues)
export type AccessMembers = typeof AccessMembers.Type

const createShape = {
  title: Schema.optionalKey(Schema.NullOr(Schema.String)),
  metadata: Schema.optionalKey(Schema.Unknown),
  billing_subject: Schema.optionalKey(Schema.NullOr(Schema.String)),
  default_runner_executor_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  answering_user_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)).annotate({
    description: "an agent of the account (UUID or @handle), else 422 answerer_not_eligible; default the creator"
  }),
  memory_context: Schema.optionalKey(Schema.NullOr(MemoryContextShape)),
  access: Schema.optionalKey(Schema.NullOr(AccessShape))
}

/** Every member optional: title null, metadata {}, access {default: full, entries: []} by default. */
export const CreateConversationMembers = judged(
  Schema.Struct(createShape),
  Schema.Struct({
    ...createShape,
    metadata: Schema.optionalKey(Metadata),
    billing_subject: Schema.optionalKey(BillingSubject),
    memory_context: Schema.optionalKey(Schema.NullOr(MemoryContextValues)),
    access: Schema.optionalKey(Schema.NullOr(AccessValues))
  })
)
export type CreateConversationMembers = typeof CreateConversationMembers.Type

export const CreateConversationBody = wrappedOrTopLevel("conversation", CreateConversationMembers)

const updateShape = {
  lock_version: LockVersion,
  title: Schema.optionalKey(Schema.NullOr(Schema.String)),
  metadata: Schema.optionalKey(Schema.Unknown)
}

/** `{lock_version, title?, metadata?}`; title or metadata missing both is the domain's 400 parameter_missing. */
export const UpdateConversationMembers = judged(
  Schema.Struct(updateShape),
  Schema.Struct({ ...updateShape, metadata: Schema.optionalKey(Metadata) })
)
export type UpdateConversationMembers = typeof UpdateConversationMembers.Type

export const UpdateConversationBody = wrappedOrTopLevel("conversation", UpdateConversationMembers)

/** `{access: {default, entries?}}`: both replaced whole. */
export const ReplaceAccessBody = wrappedOrTopLevel("access", AccessMembers)

/** `{executor_public_id}`: a runner's UUID, or null to clear. */
export const DefaultRunnerMembers = Schema.Struct({ executor_public_id: Schema.NullOr(PublicId) })
export type DefaultRunnerMembers = typeof DefaultRunnerMembers.Type

export const DefaultRunnerBody = wrappedOrTopLevel("default_runner", DefaultRunnerMembers)

/** `{memory_context: null | {bindings}}`: the member is required (absent 400 parameter_missing). */
export const SetMemoryContextBody = Schema.Struct({ memory_context: Schema.NullOr(MemoryContextMembers) })
export type SetMemoryContextBody = typeof SetMemoryContextBody.Type

/** `{turn_public_id?, variant_public_id?, side?, title?}`: at the newest settled turn by default. */
export const ForkMembers = Schema.Struct({
  turn_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  variant_public_id: Schema.optionalKey(Schema.NullOr(Schema.String)),
  side: Schema.optionalKey(Schema.NullOr(Schema.Boolean)),
  title: Schema.optionalKey(Schema.NullOr(Schema.String))
})
export type ForkMembers = typeof ForkMembers.Type

export const ForkBody = wrappedOrTopLevel("fork", ForkMembers)

/** Filters every list takes; the domain judges them (400 parameter_invalid). */
const filters = {
  ...PageQuery,
  answering_user_public_id: Schema.optional(Schema.String),
  metadata_key: Schema.optional(Schema.String),
  metadata_value: Schema.optional(Schema.String),
  order_by: Schema.optional(Schema.String)
}

export const ConversationListResponse = Schema.Struct({
  conversations: Schema.Array(ConversationSummary),
  pagination: Pagination
})

export const ConversationEventsResponse = Schema.Struct({
  events: Schema.Array(FeedItem),
  pagination: Schema.Struct({ next_after: Schema.NullOr(Schema.String), watermark: Schema.Natural })
})

const collection = "/agent_api/v1/workspaces/:workspace_id/conversations"
const one = `${collection}/:conversation_id` as const
const workspaceParams = { workspace_id: Schema.String }
const params = { ...workspaceParams, conversation_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]
const createErrors = [...errors, RateLimitedResponse]
const keyed = "Header Idempotency-Key (1 to 255 bytes). 201; a replay answers 201 with the original body."

export class ConversationsGroup extends HttpApiGroup.make("conversations")
  .add(
    HttpApiEndpoint.get("listRoots", "/agent_api/v1/conversations", {
      query: { ...filters, archived: Schema.optional(Schema.String) },
      success: ConversationListResponse,
      error: errors
    }).annotate(OpenApi.Description, "Root conversations across the workspaces the caller can see."),
    HttpApiEndpoint.get("list", collection, {
      params: workspaceParams,
      query: { ...filters, side: Schema.optional(Schema.String) },
      success: ConversationListResponse,
      error: errors
    }).annotate(OpenApi.Description, "Active roots; side=1 or true lists active sides."),
    HttpApiEndpoint.get("archived", `${collection}/archived`, {
      params: workspaceParams,
      query: filters,
      success: ConversationListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The workspace's archived conversations, with the list filters and ordering."),
    HttpApiEndpoint.get("show", one, { params, success: ConversationResponse, error: errors }).annotate(
      OpenApi.Description,
      "One conversation, the full document: 200 {conversation}."
    ),
    HttpApiEndpoint.get("children", `${one}/children`, {
      params,
      query: filters,
      success: ConversationListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The conversation's subagent children."),
    HttpApiEndpoint.post("create", collection, {
      params: workspaceParams,
      headers: IdempotencyKeyHeader,
      payload: optionalBody(CreateConversationBody),
      success: ConversationResponse.pipe(HttpApiSchema.status(201)),
      error: createErrors
    })
      .middleware(Idempotent)
      .annotate(OpenApi.Description, keyed),
    HttpApiEndpoint.patch("update", one, {
      params,
      payload: UpdateConversationBody,
      success: ConversationResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{conversation: {title?, metadata?, lock_version}}, at least one of title or metadata: 200 {conversation}."
    ),
    HttpApiEndpoint.delete("remove", one, { params, error: errors }).annotate(
      OpenApi.Description,
      "Tombstones the conversation: 204."
    ),
    HttpApiEndpoint.post("archive", `${one}/archive`, {
      params,
      success: ConversationResponse,
      error: errors
    }).annotate(OpenApi.Description, "Archives the conversation: 200 {conversation}."),
    HttpApiEndpoint.post("unarchive", `${one}/unarchive`, {
      params,
      success: ConversationResponse,
      error: errors
    }).annotate(OpenApi.Description, "Returns an archived conversation to the working list: 200 {conversation}."),
    HttpApiEndpoint.put("replaceAccess", `${one}/access`, {
      params,
      payload: ReplaceAccessBody,
      success: ConversationResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{access: {default, entries?: [{user_public_id or handle, level}]}}, a whole replacement: 200 {conversation}."
    ),
    HttpApiEndpoint.put("setDefaultRunner", `${one}/default_runner`, {
      params,
      payload: DefaultRunnerBody,
      success: ConversationResponse,
      error: errors
    }).annotate(OpenApi.Description, "{default_runner: {executor_public_id: UUID or null}}: 200 {conversation}."),
    HttpApiEndpoint.post("setMemoryContext", `${one}/memory_context`, {
      params,
      payload: SetMemoryContextBody,
      success: ConversationResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{memory_context: {bindings: [...]}}; null restores the default roots, {bindings: []} disables memory. 200 {conversation}."
    ),
    HttpApiEndpoint.post("fork", `${one}/forks`, {
      params,
      headers: IdempotencyKeyHeader,
      payload: optionalBody(ForkBody),
      success: ConversationResponse.pipe(HttpApiSchema.status(201)),
      error: createErrors
    })
      .middleware(Idempotent)
      .annotate(OpenApi.Description, keyed),
    HttpApiEndpoint.get("events", `${one}/events`, {
      params,
      query: { after: Schema.optional(Schema.String), limit: Schema.optional(Schema.String) },
      success: ConversationEventsResponse,
      error: errors
    }).annotate(OpenApi.Description, "The conversation's feed: limit 1 to 200 (default 100).")
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: conversations" })) {}
