// Member: uploads (spec "Upload", "Member: uploads", supplement "Uploads"). The ingest door takes a
// multipart/form-data body with one file part named `upload[file]`, streamed by the http layer
// under the upload bounds (100 MiB file, 110 MiB body; the 4 MiB JSON bound does not apply); the
// descriptor is its creator's; bytes, thumbnail and preview answer raw bytes with a strong ETag
// and private caching. The executor door (executor/Uploads.ts) and the browser door take the same body.
import { Schema } from "effect"
import { Multipart } from "effect/http"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, ContentTooLarge, NotFound, RateLimitedResponse } from "../Errors.ts"
import { MemberAuthentication } from "./Caller.ts"

/** The name of the multipart part that carries the file. */
export const uploadFilePart = "upload[file]"

export const UploadDescriptor = Schema.Struct({
  public_id: Schema.String,
  filename: Schema.String,
  content_type: Schema.String,
  byte_size: Schema.Natural,
  created_at: Schema.DateFromString
})

export const UploadResponse = Schema.Struct({ upload: UploadDescriptor })

/** The ingest body as OpenAPI shows it; the server streams it itself and never buffers it. */
export const UploadPayload = Schema.Struct({ [uploadFilePart]: Multipart.SingleFileSchema }).pipe(
  HttpApiSchema.asMultipart()
)

const ingestDescription =
  "multipart/form-data with one file part named upload[file] (none: 400 parameter_missing; a non-file part of that name, " +
  "or two: 400 parameter_invalid). A body declared over 110 MiB is refused before it is read, a file passing " +
  "104,857,600 bytes as it streams (413 content_too_large). content_type is detected from the bytes; the filename is " +
  "sanitized and its extension corrected for detected media. No idempotency: a repeat is a second upload."

/** The ingest endpoint of a door (member or executor). */
export const ingestEndpoint = <const Path extends `/${string}`>(path: Path) =>
  HttpApiEndpoint.post("create", path, {
    payload: UploadPayload,
    success: UploadResponse.pipe(HttpApiSchema.status(201)),
    error: [BadRequest, ContentTooLarge, RateLimitedResponse]
  }).annotate(OpenApi.Description, ingestDescription)

const params = { public_id: Schema.String }

const readDescription = (what: string) =>
  `${what} Readable by the creator or a principal who can read a row naming the upload, else 404. Strong ETag ` +
  '"<kind>-<sha256>", Cache-Control private, max-age=31556952; If-None-Match naming it (or *) answers 304 with no body.'

const bytesEndpoint = HttpApiEndpoint.get("bytes", "/agent_api/v1/uploads/:public_id/bytes", {
  params,
  success: HttpApiSchema.StreamUint8Array(),
  error: [NotFound, RateLimitedResponse]
}).annotate(
  OpenApi.Description,
  readDescription(
    "The original bytes as an attachment, with the detected Content-Type. One bytes= range (a-b, a-, -n) answers 206 " +
      "with Content-Range, a start past the end 416 with Content-Range: bytes */<size>; several or malformed ranges the whole."
  )
)

const representationEndpoint = <const Name extends "thumbnail" | "preview">(name: Name, bound: number) =>
  HttpApiEndpoint.get(name, `/agent_api/v1/uploads/:public_id/${name}`, {
    params,
    success: HttpApiSchema.StreamUint8Array({ contentType: ["image/png", "image/jpeg"] }),
    error: [NotFound, RateLimitedResponse]
  }).annotate(
    OpenApi.Description,
    readDescription(
      `An inline ${name} of a PNG, JPEG, GIF (first frame) or WebP upload, its longest edge at most ${bound} px, never ` +
        "enlarged (JPEG as image/jpeg, others image/png); Range is ignored. 404 representation_unavailable for other uploads."
    )
  )

export class UploadsGroup extends HttpApiGroup.make("uploads")
  .add(
    ingestEndpoint("/agent_api/v1/uploads"),
    HttpApiEndpoint.get("show", "/agent_api/v1/uploads/:public_id", {
      params,
      success: UploadResponse,
      error: [NotFound, RateLimitedResponse]
    }).annotate(OpenApi.Description, "The descriptor; its creator's alone, else 404."),
    bytesEndpoint,
    representationEndpoint("thumbnail", 256),
    representationEndpoint("preview", 1600)
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: uploads" })) {}
