// Handlers of the member upload door and reads (spec "Member: uploads"): the ingest streams the
// multipart body itself (conventions/UploadIngest.ts); the descriptor is its creator's; bytes,
// thumbnail and preview stream from disk (conventions/ByteRanges.ts) with the strong ETag
// `"<kind>-<sha256>"` and `Cache-Control: private, max-age=31556952`. Every upload route counts
// against the caller's upload budget (600 per minute) once it is authenticated.
import { TroupeApi } from "@troupe/contracts/Api"
import { CallerIdentity } from "@troupe/contracts/Idempotency"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import type { UploadReader } from "@troupe/domain/uploads/UploadAccess"
import { type RepresentationKind, type UploadFile, UploadRequestLimit, Uploads } from "@troupe/domain/uploads/Uploads"
import { create as contentDisposition } from "content-disposition"
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { storedFileResponse } from "../conventions/ByteRanges.ts"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { consume } from "../conventions/RateLimit.ts"
import { uploadAtDoor, uploadDescriptor } from "../conventions/UploadIngest.ts"

/** Attachment reads are cacheable by the reader for a year (spec "Member: uploads"). */
const attachmentCaching = "private, max-age=31556952"

/** What a read answers: the file with its strong ETag for the read's kind. */
const fileAnswer = (
  request: HttpServerRequest.HttpServerRequest,
  kind: "bytes" | RepresentationKind,
  file: UploadFile
) =>
  storedFileResponse(request, {
    content: { path: file.path },
    size: file.byteSize,
    contentType: file.contentType,
    etag: `"${kind}-${file.upload.sha256}"`,
    cacheControl: attachmentCaching,
    disposition: kind === "bytes" ? contentDisposition(file.upload.filename) : undefined,
    ranges: kind === "bytes"
  })

export const UploadsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "uploads",
  Effect.fn(function* (handlers) {
    const uploads = yield* Uploads
    const limiter = yield* RateLimiter
    const limit = yield* UploadRequestLimit
    const provided = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      effect.pipe(
        Effect.provideService(Uploads, uploads),
        Effect.provideService(RateLimiter, limiter),
        Effect.provideService(UploadRequestLimit, limit)
      )
    /** The reader, its budget counted. */
    const reader = Effect.gen(function* () {
      const caller = yield* CurrentMemberCaller
      yield* consume(limit, (yield* CallerIdentity).key).pipe(Effect.provideService(RateLimiter, limiter))
      return { userId: caller.user.id } satisfies UploadReader
    })
    const read = (request: HttpServerRequest.HttpServerRequest, publicId: string, kind: "bytes" | RepresentationKind) =>
      Effect.gen(function* () {
        const who = yield* reader
        const file = yield* answerRefusals(
          kind === "bytes" ? uploads.bytes(who, publicId) : uploads.representation(who, publicId, kind)
        )
        return yield* fileAnswer(request, kind, file)
      })
    return handlers
      .handleRaw("create", () =>
        Effect.gen(function* () {
          const caller = yield* CurrentMemberCaller
          const key = (yield* CallerIdentity).key
          return yield* provided(uploadAtDoor({ kind: "member", userId: caller.user.id }, key))
        })
      )
      .handle("show", ({ params }) =>
        Effect.gen(function* () {
          const row = yield* answerRefusals(uploads.descriptor(yield* reader, params.public_id))
          return { upload: uploadDescriptor(row) }
        })
      )
      .handle("bytes", ({ params, request }) => read(request, params.public_id, "bytes"))
      .handle("thumbnail", ({ params, request }) => read(request, params.public_id, "thumbnail"))
      .handle("preview", ({ params, request }) => read(request, params.public_id, "preview"))
  })
)
