// Executor plane: the inbox (spec "Inbox task (executor plane)", runs supplement "Executor
// inbox"): list rows, claim one, check or extend the claim, read the run's attachments under the
// claim, commit the result, post progress.
// What is decoded here and what is left to the domain (domain/runs/InboxBodies.ts), so that
// refusals keep the supplement's order: the list's `after`/`limit` stay strings (the domain
// answers 400 parameter_invalid); the claim check's Claim-Token header is required (400
// parameter_missing). The extend and commit bodies are read loosely (every member unknown): the
// domain judges them in order, first found wins (extend: claim_token missing or blank 400
// parameter_missing, timeout_ms 422 invalid_timeout_ms, over one hour 409 extension_too_long;
// commit: the run's standing, 404, not_addressed_here and not_claimable_kind, comes before
// claim_token is required, and the claim's checks before the body faults invalid_content,
// validation_failed, too_many_content_blocks, unknown_result_upload, invalid_title,
// invalid_metadata, invalid_result_type, content_too_large); `Extend` and `Commit` are the typed
// forms a client sends. Progress decodes `{frame: object}` (absent 400 parameter_missing, not an
// object 400 parameter_invalid, as the domain would); invalid_frame and the 16 KiB bound are the
// domain's, in that order.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  BadRequest,
  Conflict,
  ContentTooLarge,
  Forbidden,
  NotFound,
  RateLimitedResponse,
  Unauthorized,
  Unprocessable
} from "../Errors.ts"
import { AddressedTo, ContentBlock, RunTaskResponse, TaskTarget } from "../member/RunShapes.ts"
import { UploadResponse } from "../member/Uploads.ts"
import { Pagination } from "../Pagination.ts"
import { ExecutorAuthentication } from "./Caller.ts"
import { EffectProfile } from "./Executor.ts"

const JsonObject = Schema.Record(Schema.String, Schema.Unknown)

/** The kinds this contract knows; a client carries rows of any other kind (spec). */
export const inboxTaskKinds = ["tool_call", "ask", "approval"] as const
export type InboxTaskKind = (typeof inboxTaskKinds)[number]

/**
 * One inbox row. Common members first; tool_call adds tool_name, tool_input, tool_call_id,
 * tool_alias? and scope?; ask adds prompt, options?, multi?; approval adds tool_name, tool_input
 * and effect_profile. `kind` is any string: rows of kinds this contract does not know are carried.
 */
export const InboxTask = Schema.Struct({
  kind: Schema.String.annotate({ description: "tool_call, ask or approval; other kinds are carried, never failed" }),
  run_public_id: Schema.String,
  workspace_public_id: Schema.String,
  conversation_public_id: Schema.NullOr(Schema.String),
  parent_public_id: Schema.NullOr(Schema.String),
  task_key: Schema.String,
  started_at: Schema.NullOr(Schema.DateFromString),
  deadline_at: Schema.DateFromString,
  timeout_ms: Schema.Natural,
  claimed: Schema.Boolean,
  addressed_to: AddressedTo,
  target: Schema.optionalKey(TaskTarget),
  tool_name: Schema.optionalKey(Schema.String),
  tool_input: Schema.optionalKey(JsonObject),
  tool_call_id: Schema.optionalKey(Schema.String),
  tool_alias: Schema.optionalKey(Schema.String),
  scope: Schema.optionalKey(Schema.Struct({ bindings: Schema.Array(Schema.Unknown) })),
  prompt: Schema.optionalKey(Schema.String),
  options: Schema.optionalKey(Schema.Array(Schema.String)),
  multi: Schema.optionalKey(Schema.Boolean),
  effect_profile: Schema.optionalKey(EffectProfile)
})
export type InboxTask = typeof InboxTask.Type

export const InboxPage = Schema.Struct({ tasks: Schema.Array(InboxTask), pagination: Pagination })
export type InboxPage = typeof InboxPage.Type

export const Claim = Schema.Struct({ claim_token: Schema.String, deadline_at: Schema.DateFromString })
export type Claim = typeof Claim.Type

/** Claim and extend: the row and the claim (extend keeps the token, moves the deadline). */
export const ClaimResponse = Schema.Struct({ task: InboxTask, claim: Claim })
export type ClaimResponse = typeof ClaimResponse.Type

export const ClaimCheckResponse = Schema.Struct({ claim: Schema.Struct({ active: Schema.Boolean }) })

/** What an extension says, typed: the form a client builds (the route reads `ExtendBody`). */
export const Extend = Schema.Struct({
  claim_token: Schema.String,
  timeout_ms: Schema.Int.check(Schema.isGreaterThan(0))
})
export type Extend = typeof Extend.Type

const loose = (description: string) => Schema.optionalKey(Schema.Unknown.annotate({ description }))

/** The extend route's body: its members as sent, judged by the domain in the supplement's order. */
export const ExtendBody = Schema.Struct({
  claim_token: loose("Required: the token of the current claim"),
  timeout_ms: loose("Required: a positive integer of at most 3600000 (one hour)")
})
export type ExtendBody = typeof ExtendBody.Type

/** What a commit may say, typed: the form a client builds (the route reads `CommitBody`). */
export const Commit = Schema.Struct({
  claim_token: Schema.String,
  content: Schema.Union([Schema.String, Schema.Array(ContentBlock)]),
  structured_content: Schema.optionalKey(Schema.Unknown),
  is_error: Schema.optionalKey(Schema.Boolean),
  outcome: Schema.optionalKey(Schema.Literals(["completed", "failed"])),
  title: Schema.optionalKey(Schema.String),
  metadata: Schema.optionalKey(JsonObject),
  result_type: Schema.optionalKey(Schema.String)
})
export type Commit = typeof Commit.Type

/** The commit route's body: every member as sent, judged by the domain in the supplement's order. */
export const CommitBody = Schema.Struct({
  claim_token: loose("Required: the token of the current claim"),
  content: loose(
    'Required: a string, or at most 256 blocks {type: "text", text} | ' +
      '{type: "resource_link", uri: "svc://uploads/<public_id>", name, mimeType?, size?, title?, description?}'
  ),
  structured_content: loose("Any JSON value"),
  is_error: loose("Boolean: completed with is_error"),
  outcome: loose('"completed" (default) or "failed" (the task fails tool_failed)'),
  title: loose("A string of at most 255 characters"),
  metadata: loose("An object of at most 16 KiB canonical JSON (metadata.checkpoint names a runner checkpoint)"),
  result_type: loose("A string of 1 to 64 characters")
})
export type CommitBody = typeof CommitBody.Type

/** A frame about a claimed tool task. */
export const TaskFrame = Schema.Struct({
  run_public_id: Schema.String,
  task_key: Schema.String,
  claim_token: Schema.String,
  text_tail: Schema.optionalKey(Schema.String),
  structured: Schema.optionalKey(JsonObject)
})
export type TaskFrame = typeof TaskFrame.Type

/** A frame about a process a runner keeps for a conversation (a standalone run: run_public_id). */
export const ProcessFrame = Schema.Struct({
  conversation_public_id: Schema.optionalKey(Schema.String),
  run_public_id: Schema.optionalKey(Schema.String),
  process_id: Schema.String,
  source: Schema.Struct({ run_public_id: Schema.String, task_key: Schema.String, claim_token: Schema.String }),
  lines: Schema.Array(Schema.String),
  exit: Schema.NullOr(Schema.Int)
})
export type ProcessFrame = typeof ProcessFrame.Type

export const ProgressBody = Schema.Struct({
  frame: JsonObject.annotate({ description: "A task frame or a process frame (runs supplement)" })
})
export type ProgressBody = typeof ProgressBody.Type

export const ProgressAnswer = Schema.Struct({ accepted: Schema.Boolean })

const inbox = "/agent_api/v1/executor/inbox"
const row = `${inbox}/:run_public_id/:task_key`
const rowParams = { run_public_id: Schema.String, task_key: Schema.String }
const rowErrors = [BadRequest, Unauthorized, Forbidden, NotFound, Conflict] as const
const attachment = `${row}/attachments/:upload_public_id`
const attachmentParams = { ...rowParams, upload_public_id: Schema.String }
const claimTokenHeader = {
  "claim-token": Schema.String.annotate({ description: "Required: the token of this executor's current claim" })
}
const attachmentDescription = (what: string) =>
  `${what} Proof is the Claim-Token header (missing 400 parameter_missing; another executor or token 409 not_claimant; ` +
  "the claim settled or past its deadline 409 claim_inactive). An upload the run does not bind (named by a task's " +
  "attachments, or linked as svc://uploads/<id> from a committed result) is 404 not_found."

export class ExecutorInboxGroup extends HttpApiGroup.make("executorInbox")
  .add(
    HttpApiEndpoint.get("list", inbox, {
      query: { after: Schema.optional(Schema.String), limit: Schema.optional(Schema.String) },
      success: InboxPage,
      error: [BadRequest, Unauthorized]
    }).annotate(
      OpenApi.Description,
      "Rows addressed to this executor, by dispatch time then key; limit 1-200 (default 50). Level-triggered: answered work leaves."
    ),
    HttpApiEndpoint.post("claim", `${row}/claim`, {
      params: rowParams,
      success: ClaimResponse,
      error: [...rowErrors, RateLimitedResponse]
    }).annotate(OpenApi.Description, "Claims a tool_call row: the token rotates and the deadline restarts."),
    HttpApiEndpoint.get("claimCheck", `${row}/claim`, {
      params: rowParams,
      headers: { "claim-token": Schema.String },
      success: ClaimCheckResponse,
      error: [...rowErrors, RateLimitedResponse]
    }).annotate(OpenApi.Description, "Whether the claim is still active; writes and renews nothing."),
    HttpApiEndpoint.post("extend", `${row}/extend`, {
      params: rowParams,
      payload: ExtendBody,
      success: ClaimResponse,
      error: [...rowErrors, ContentTooLarge, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Sets the deadline to now + min(timeout_ms, the announced timeout_ms); over one hour is 409 extension_too_long."
    ),
    HttpApiEndpoint.post("commit", `${row}/commit`, {
      params: rowParams,
      payload: CommitBody,
      success: RunTaskResponse,
      error: [...rowErrors, ContentTooLarge, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Settles the claimed task with its result; a replay after settling answers the task unchanged."
    ),
    HttpApiEndpoint.get("attachment", attachment, {
      params: attachmentParams,
      headers: claimTokenHeader,
      success: UploadResponse,
      error: [...rowErrors, RateLimitedResponse]
    }).annotate(OpenApi.Description, attachmentDescription("The descriptor of an upload bound to the task's run.")),
    HttpApiEndpoint.get("attachmentBytes", `${attachment}/bytes`, {
      params: attachmentParams,
      headers: claimTokenHeader,
      success: HttpApiSchema.StreamUint8Array(),
      error: [...rowErrors, RateLimitedResponse]
    }).annotate(
      OpenApi.Description,
      attachmentDescription(
        "The upload's original bytes with its detected Content-Type, Cache-Control no-store, never a redirect. One " +
          "bytes= range answers 206 with Content-Range, a start past the end 416; several or malformed ranges the whole."
      )
    ),
    HttpApiEndpoint.post("progress", "/agent_api/v1/executor/progress", {
      payload: ProgressBody,
      success: ProgressAnswer.pipe(HttpApiSchema.status(202)),
      error: [BadRequest, Unauthorized, ContentTooLarge, Unprocessable]
    }).annotate(
      OpenApi.Description,
      "Relays a task or process frame on the run's progress feed; accepted is false when the frame was dropped."
    )
  )
  .middleware(ExecutorAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Executor plane: inbox" })) {}
