// Member: prompt documents (spec "Prompt document"), at the profile door
// (/agent_api/v1/profile/prompt_documents) and the workspace door
// (/agent_api/v1/workspaces/{workspace_id}/prompt_documents). A write's body is
// `{prompt_document: {content, role?}}` or the same members at top level; their faults carry their
// codes (prompt_document_invalid, prompt_document_too_large; null content is parameter_missing).
// What depends on the slot (its role, its macros) is the domain's. Answers are encoded from rows.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { coded, specCode } from "../Codes.ts"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { wrappedOrTopLevel } from "../Wrapped.ts"
import { MemberAuthentication } from "./Caller.ts"

const Role = Schema.Literals(["system", "developer", "user"])

/** A list row. */
export const PromptDocumentSummary = Schema.Struct({
  slot: Schema.String,
  role: Role,
  bytesize: Schema.Natural,
  version: Schema.Natural,
  written_at: Schema.DateFromString
})

/** A read: the list row and the content, macros unrendered. */
export const PromptDocument = Schema.Struct({ ...PromptDocumentSummary.fields, content: Schema.String })

export const PromptDocumentResponse = Schema.Struct({ prompt_document: PromptDocument })
export const PromptDocumentListResponse = Schema.Struct({ prompt_documents: Schema.Array(PromptDocumentSummary) })

/** The spec's bound on a document's content, in UTF-8 bytes. */
const maxContentBytes = 64 * 1024

/** Content: text that is not blank, at most 64 KiB; null is no content (400 parameter_missing). */
const Content = Schema.NullOr(
  Schema.String.pipe(coded("prompt_document_invalid")).check(
    Schema.makeFilter(
      (text: string) => {
        const bytes = new TextEncoder().encode(text).length
        return bytes <= maxContentBytes || `${bytes} bytes, over 64 KiB`
      },
      { [specCode]: "prompt_document_too_large" }
    ),
    Schema.makeFilter((text: string) => text.trim() !== "", {
      expected: "text that is not blank (DELETE the slot to empty it)"
    })
  )
)
  .annotate({ description: "text, at most 64 KiB", expected: "text" })
  .pipe(
    coded("prompt_document_invalid"),
    Schema.refine((content): content is string => content !== null, {
      expected: "content",
      [specCode]: "parameter_missing"
    })
  )

/** A write: content required, role optional (absent or null: system). */
export const PromptDocumentWriteBody = wrappedOrTopLevel(
  "prompt_document",
  Schema.Struct({
    content: Content,
    role: Schema.optionalKey(
      Schema.NullOr(Role)
        .annotate({ description: "system (default), developer or user" })
        .pipe(coded("prompt_document_invalid"))
    )
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
    HttpApiEndpoint.get(`${prefix}List`, collection, {
      params,
      success: PromptDocumentListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The prompt document slots here."),
    HttpApiEndpoint.get(`${prefix}Read`, `${collection}/:slot`, {
      params: slotParams,
      success: PromptDocumentResponse,
      error: errors
    }).annotate(OpenApi.Description, "One prompt document slot."),
    HttpApiEndpoint.put(`${prefix}Write`, `${collection}/:slot`, {
      params: slotParams,
      payload: PromptDocumentWriteBody,
      success: PromptDocumentResponse,
      error: errors
    }).annotate(OpenApi.Description, "Body {prompt_document: {content, role?}}; an omitted role resets to system."),
    HttpApiEndpoint.delete(`${prefix}Delete`, `${collection}/:slot`, { params: slotParams, error: errors }).annotate(
      OpenApi.Description,
      "Clears the slot: 204."
    )
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
