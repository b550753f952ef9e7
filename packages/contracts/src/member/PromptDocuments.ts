// Member: prompt documents (spec "Prompt document"), at the profile door
// (/agent_api/v1/profile/prompt_documents) and the workspace door
// (/agent_api/v1/workspaces/{workspace_id}/prompt_documents). A write's body is
// `{prompt_document: {content, role?}}` or the same members at top level; both are read as any
// JSON and judged by the domain, since their faults are 422 prompt_document_invalid.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"

const Role = Schema.Literals(["system", "developer", "user"])

/** A list row. */
export const PromptDocumentSummary = Schema.Struct({
  slot: Schema.String,
  role: Role,
  bytesize: Schema.Number,
  version: Schema.Number,
  written_at: Schema.String
})

/** A read: the list row and the content, macros unrendered. */
export const PromptDocument = Schema.Struct({ ...PromptDocumentSummary.fields, content: Schema.String })

export const PromptDocumentResponse = Schema.Struct({ prompt_document: PromptDocument })
export const PromptDocumentListResponse = Schema.Struct({ prompt_documents: Schema.Array(PromptDocumentSummary) })

/** A write: content required (null is judged missing by the domain), role optional. */
export const PromptDocumentWriteBody = wrappedOrTopLevel(
  "prompt_document",
  Schema.Struct({
    content: Schema.Unknown.annotate({ description: "text, at most 64 KiB" }),
    role: Schema.optionalKey(Schema.Unknown.annotate({ description: "system (default), developer or user" }))
  })
)

// 413 only for a body over the server's 4 MiB bound (a document over 64 KiB is 422).
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

const endpoints = <
  const Name extends string,
  const Path extends `/${string}`,
  const Params extends Schema.Struct.Fields
>(
  prefix: Name,
  collection: Path,
  params: Params
) => {
  const slotParams = { ...params, slot: Schema.String }
  return [
    HttpApiEndpoint.get(`${prefix}List`, collection, { params, success: PromptDocumentListResponse, error: errors }),
    HttpApiEndpoint.get(`${prefix}Read`, `${collection}/:slot`, {
      params: slotParams,
      success: PromptDocumentResponse,
      error: errors
    }),
    HttpApiEndpoint.put(`${prefix}Write`, `${collection}/:slot`, {
      params: slotParams,
      payload: PromptDocumentWriteBody,
      success: PromptDocumentResponse,
      error: errors
    }).annotate(OpenApi.Description, "Body {prompt_document: {content, role?}}; an omitted role resets to system."),
    HttpApiEndpoint.delete(`${prefix}Delete`, `${collection}/:slot`, { params: slotParams, error: errors })
  ] as const
}

const profile = endpoints("profile", "/agent_api/v1/profile/prompt_documents", {})
const workspace = endpoints("workspace", "/agent_api/v1/workspaces/:workspace_id/prompt_documents", {
  workspace_id: Schema.String
})

export class PromptDocumentsGroup extends HttpApiGroup.make("promptDocuments")
  .add(...profile, ...workspace)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: prompt documents" })) {}
