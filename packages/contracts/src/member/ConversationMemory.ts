// Member: conversation memory (spec "Member: profile memory", "Memory binding"; supplement
// "Access, default runner, messaging, memory, store"). The six verbs of every memory door at
// .../conversations/{id}/memory, whose bodies also take speaker_public_id (the speaker a speaker/
// binding remembers) and whose list is wrapped, {memory: [...]}, with the speaker as the query's
// memory[speaker_public_id]. Which scopes the conversation's bindings reach is the domain's.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { PublicId } from "../PublicId.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import { MemoryGrepResponse, MemoryResponse, MemoryRow, memoryMembers } from "./Memory.ts"

const speaker = { speaker_public_id: Schema.optionalKey(Schema.NullOr(PublicId)) }

const body = <const Fields extends Schema.Struct.Fields>(fields: Fields) =>
  wrappedOrTopLevel("memory", Schema.Struct({ ...fields, ...speaker }))

export const ConversationMemoryShowBody = body(memoryMembers.show)
export const ConversationMemoryWriteBody = body(memoryMembers.write)
export const ConversationMemoryEditBody = body(memoryMembers.edit)
export const ConversationMemoryRemoveBody = body(memoryMembers.remove)
export const ConversationMemoryGrepBody = body(memoryMembers.grep)

export const ConversationMemoryListResponse = Schema.Struct({ memory: Schema.Array(MemoryRow) })

const base = "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id/memory"
const params = { workspace_id: Schema.String, conversation_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]
const scopes =
  "Paths reach the conversation's bindings (by default conversation/, workspace/ and user/); another scope is 422 memory_scope_unavailable."

/** A conversation's memory: reads need read level; writes full level, not archived, and advance context_revision. */
export class ConversationMemoryGroup extends HttpApiGroup.make("conversationMemory")
  .add(
    HttpApiEndpoint.get("list", base, {
      params,
      query: { "memory[speaker_public_id]": Schema.optional(PublicId) },
      success: ConversationMemoryListResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      `{memory: [{path, public_id, lock_version, bytesize, description, written_at}]}. ${scopes}`
    ),
    HttpApiEndpoint.post("write", base, {
      params,
      payload: ConversationMemoryWriteBody,
      success: MemoryResponse.pipe(HttpApiSchema.status(201)),
      error: errors
    }).annotate(
      OpenApi.Description,
      "{memory: {path, content, description?, expected_public_id, expected_lock_version, speaker_public_id?}}: null pair creates, the observed pair replaces (also 201)."
    ),
    HttpApiEndpoint.post("show", `${base}/show`, {
      params,
      payload: ConversationMemoryShowBody,
      success: MemoryResponse,
      error: errors
    }).annotate(OpenApi.Description, "{memory: {path, speaker_public_id?}}"),
    HttpApiEndpoint.post("grep", `${base}/grep`, {
      params,
      payload: ConversationMemoryGrepBody,
      success: MemoryGrepResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{memory: {pattern, path?, ignore_case?, limit? (1 to 500, default 100), speaker_public_id?}}; lines capped at 500 characters."
    ),
    HttpApiEndpoint.post("edit", `${base}/edit`, {
      params,
      payload: ConversationMemoryEditBody,
      success: MemoryResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{memory: {path, old_text, new_text, expected_public_id, expected_lock_version, speaker_public_id?}}"
    ),
    HttpApiEndpoint.post("remove", `${base}/delete`, {
      params,
      payload: ConversationMemoryRemoveBody,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{memory: {path, expected_public_id, expected_lock_version, speaker_public_id?}} (the observed pair): 204."
    )
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: conversation memory" })) {}
