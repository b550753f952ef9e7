// Member: memory (spec "Memory document", "Member: profile memory"). The verbs share one shape
// at every door; `memoryEndpoints` builds the six for a door's /memory path. Paths carry the
// scope in the body, never in the URL. Bodies are `{memory: {...}}` or the same members at top
// level; members whose faults are 422s carry their codes (MemoryMembers.ts). Answers are encoded
// from the stored rows. This module has the profile, workspace and named-agent doors (the
// conversation door, whose bodies add a speaker, is ConversationMemory.ts).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { LockVersion } from "../LockVersion.ts"
import { PublicId } from "../PublicId.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"
import {
  MemoryContent,
  MemoryDescription,
  MemoryFilterPath,
  MemoryNewText,
  MemoryOldText,
  MemoryPath
} from "./MemoryMembers.ts"
import { NamedAgentName } from "./NamedAgents.ts"

/** A list row. description is only on skills/ rows (null elsewhere). */
export const MemoryRow = Schema.Struct({
  path: Schema.String,
  public_id: Schema.String,
  lock_version: Schema.Natural,
  bytesize: Schema.Natural,
  description: Schema.NullOr(Schema.String),
  written_at: Schema.DateFromString
})

/** A document as show and the writes answer it: the row and its content. */
export const MemoryDocument = Schema.Struct({ ...MemoryRow.fields, content: Schema.String })

export const MemoryResponse = Schema.Struct({ memory: MemoryDocument })

export const MemoryGrepResponse = Schema.Struct({
  matches: Schema.Array(Schema.Struct({ path: Schema.String, line_number: Schema.Natural, text: Schema.String })),
  truncated: Schema.Boolean
})

/** The conditional pair: both null creates, the observed pair replaces or deletes. */
const expected = {
  expected_public_id: Schema.NullOr(PublicId),
  expected_lock_version: Schema.NullOr(LockVersion)
}

/** The members of each verb's body, for doors that add their own (the conversation door's speaker). */
export const memoryMembers = {
  show: { path: MemoryPath },
  write: {
    path: MemoryPath,
    content: MemoryContent,
    description: Schema.optionalKey(MemoryDescription),
    ...expected
  },
  edit: { path: MemoryPath, old_text: MemoryOldText, new_text: MemoryNewText, ...expected },
  remove: { path: MemoryPath, ...expected },
  grep: {
    pattern: Schema.String,
    path: Schema.optionalKey(MemoryFilterPath),
    ignore_case: Schema.optionalKey(Schema.Boolean),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 })))
  }
}

export const MemoryShowBody = wrappedOrTopLevel("memory", Schema.Struct(memoryMembers.show))

export const MemoryWriteBody = wrappedOrTopLevel("memory", Schema.Struct(memoryMembers.write))

export const MemoryEditBody = wrappedOrTopLevel("memory", Schema.Struct(memoryMembers.edit))

export const MemoryRemoveBody = wrappedOrTopLevel("memory", Schema.Struct(memoryMembers.remove))

export const MemoryGrepBody = wrappedOrTopLevel("memory", Schema.Struct(memoryMembers.grep))

// ContentTooLarge: a body over the server-wide bound (4 MiB) is 413 before any handler reads it.
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

/** The six memory endpoints under `base` (the door's path up to and including /memory). */
export const memoryEndpoints = <const Path extends `/${string}/memory`, const Params extends Schema.Struct.Fields>(
  base: Path,
  params: Params
) => ({
  list: HttpApiEndpoint.get("list", base, { params, success: Schema.Array(MemoryRow), error: errors }).annotate(
    OpenApi.Description,
    "Every document this door reaches: [{path, public_id, lock_version, bytesize, description, written_at}] by path."
  ),
  write: HttpApiEndpoint.post("write", base, {
    params,
    payload: MemoryWriteBody,
    success: MemoryResponse.pipe(HttpApiSchema.status(201)),
    error: errors
  }).annotate(
    OpenApi.Description,
    "{memory: {path, content, description?, expected_public_id, expected_lock_version}}: null pair creates, the observed pair replaces (also 201)."
  ),
  show: HttpApiEndpoint.post("show", `${base}/show`, {
    params,
    payload: MemoryShowBody,
    success: MemoryResponse,
    error: errors
  }).annotate(OpenApi.Description, "{memory: {path}}"),
  grep: HttpApiEndpoint.post("grep", `${base}/grep`, {
    params,
    payload: MemoryGrepBody,
    success: MemoryGrepResponse,
    error: errors
  }).annotate(
    OpenApi.Description,
    "{memory: {pattern (a JavaScript regular expression, u flag), path?, ignore_case?, limit? (1 to 500, default 100)}}; lines capped at 500 characters. 422 memory_pattern_invalid when it does not compile, memory_pattern_too_costly over 1024 bytes or with a backreference or lookaround."
  ),
  edit: HttpApiEndpoint.post("edit", `${base}/edit`, {
    params,
    payload: MemoryEditBody,
    success: MemoryResponse,
    error: errors
  }).annotate(
    OpenApi.Description,
    "{memory: {path, old_text, new_text, expected_public_id, expected_lock_version}}: old_text must occur exactly once (422 memory_edit_not_found, memory_edit_ambiguous; empty: memory_edit_invalid)."
  ),
  remove: HttpApiEndpoint.post("remove", `${base}/delete`, {
    params,
    payload: MemoryRemoveBody,
    error: errors
  }).annotate(
    OpenApi.Description,
    "{memory: {path, expected_public_id, expected_lock_version}} (the observed pair): 204."
  )
})

const profile = memoryEndpoints("/agent_api/v1/profile/memory", {})

/** The caller's user/ memory: a human's own, or for an agent the human it serves (its steward). */
export class ProfileMemoryGroup extends HttpApiGroup.make("profileMemory")
  .add(profile.list, profile.write, profile.show, profile.grep, profile.edit, profile.remove)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: profile memory" })) {}

const workspace = memoryEndpoints("/agent_api/v1/workspaces/:workspace_id/memory", { workspace_id: Schema.String })

/** A workspace's workspace/ memory: reads need access, writes write standing. */
export class WorkspaceMemoryGroup extends HttpApiGroup.make("workspaceMemory")
  .add(workspace.list, workspace.write, workspace.show, workspace.grep, workspace.edit, workspace.remove)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: workspace memory" })) {}

const named = memoryEndpoints("/agent_api/v1/profile/agents/:name/memory", { name: Schema.String })

/** agent/ memory of one of the caller's own named agent definitions (declarer only). */
export class NamedAgentMemoryGroup extends HttpApiGroup.make("namedAgentMemory")
  .add(named.list, named.write, named.show, named.grep, named.edit, named.remove)
  .middleware(MemberAuthentication)
  .middleware(NamedAgentName)
  .annotateMerge(OpenApi.annotations({ title: "Member: named agent memory" })) {}
