// The multipart ingest every upload door shares (member, executor, browser; supplement "Uploads",
// "Standing, cable credentials, body bounds"): the body is streamed through `busboy` straight into
// the blob store, never held whole and never under the 4 MiB JSON bound. A body declared over
// 110 MiB is 413 before a byte is read (and one sent chunked stops there too); the file part
// `upload[file]` passing 104,857,600 bytes is 413 at that byte, reading stops and the staged file
// goes. No such file part is 400 parameter_missing; a non-file part of that name, a second one, or a
// body busboy cannot parse is 400 parameter_invalid. The upload is recorded only once the whole
// body has been read and judged, and then without interruption; a client gone earlier leaves nothing.
import type { Readable } from "node:stream"
import { type BadRequest, type ContentTooLarge, errors } from "@troupe/contracts/Errors"
import { uploadFilePart } from "@troupe/contracts/member/Uploads"
import {
  maxUploadBodyBytes,
  maxUploadBytes,
  type UploadCreator,
  UploadRequestLimit,
  type UploadRow,
  Uploads
} from "@troupe/domain/uploads/Uploads"
import Busboy from "busboy"
import { Effect, Stream } from "effect"
import { HttpServerError, HttpServerRequest } from "effect/http"
import { answerRefusals } from "./DomainRefusals.ts"
import { consume } from "./RateLimit.ts"

type Refused = BadRequest | ContentTooLarge

/**
 * A failure the door does not answer itself: a body the request conventions refused (its 415
 * carried to the global error mapper as a defect), or the end of the ingest tearing the form down.
 */
class Unanswerable {
  readonly cause: unknown
  constructor(cause: unknown) {
    this.cause = cause
  }
}

interface FilePart {
  readonly stream: Readable
  readonly filename: string | undefined
}

const essence = (contentType: string | undefined) => (contentType ?? "").split(";")[0]!.trim().toLowerCase()

const tooLarge = (what: string) => errors.contentTooLarge(what)

/** A promise whose rejection nobody need await (it is read only when the ingest gets that far). */
const settled = <A>() => {
  const deferred = Promise.withResolvers<A>()
  deferred.promise.catch(() => {})
  return deferred
}

/** Waits on a promise of the form, its rejection a door refusal (or a defect it carries). */
const awaitForm = <A>(promise: Promise<A>) =>
  Effect.tryPromise({ try: () => promise, catch: (error) => error as Refused | Unanswerable }).pipe(
    Effect.catchIf(
      (error): error is Unanswerable => error instanceof Unanswerable,
      (error) => Effect.die(error.cause)
    )
  )

/**
 * Reads the request's multipart body in the background (for the life of the scope): answers the
 * `upload[file]` part as soon as it starts, and the body's verdict once it has all been read.
 */
const openForm = Effect.fnUntraced(function* (request: HttpServerRequest.HttpServerRequest) {
  const parser = yield* Effect.try({
    try: () =>
      Busboy({
        headers: { "content-type": request.headers["content-type"] },
        preservePath: true,
        defParamCharset: "utf8",
        // busboy signals `limit` on reaching fileSize: one byte past the bound.
        limits: { fileSize: maxUploadBytes + 1, files: 16, fields: 64, parts: 64, fieldSize: 64 * 1024 }
      }),
    catch: () => errors.parameterInvalid("The multipart body has no boundary")
  })
  const file = settled<FilePart>()
  const verdict = settled<void>()
  let part: FilePart | undefined
  let refused = false

  const refuse = (reason: Refused | Unanswerable) => {
    if (refused) return
    refused = true
    file.reject(reason)
    verdict.reject(reason)
    parser.destroy()
    part?.stream.destroy()
  }

  parser.on("file", (name, stream, info) => {
    // A part cut short errors its stream; the parser's own error (or the refusal) says why.
    stream.on("error", () => {})
    if (name !== uploadFilePart || refused) return void stream.resume()
    if (part !== undefined) {
      stream.resume()
      return refuse(errors.parameterInvalid("Send one upload[file] part"))
    }
    stream.once("limit", () => refuse(tooLarge(`The file is over the ${maxUploadBytes}-byte upload bound`)))
    part = { stream, filename: info.filename }
    file.resolve(part)
  })
  parser.on("field", (name) => {
    if (name === uploadFilePart) refuse(errors.parameterInvalid("upload[file] must be a file part"))
  })
  for (const limit of ["partsLimit", "filesLimit", "fieldsLimit"] as const) {
    parser.on(limit, () => refuse(errors.parameterInvalid("The multipart body has too many parts")))
  }
  parser.on("error", () => refuse(errors.parameterInvalid("The multipart body is malformed")))
  parser.on("finish", () => {
    if (part === undefined) refuse(errors.parameterMissing("Send the file as a multipart part named upload[file]"))
    else verdict.resolve()
  })
  yield* Effect.addFinalizer(() => Effect.sync(() => refuse(new Unanswerable(new Error("the ingest ended")))))

  let received = 0
  const write = (chunk: Uint8Array) =>
    Effect.callback<void>((resume) => {
      if (refused || parser.destroyed) return resume(Effect.void)
      received += chunk.byteLength
      if (received > maxUploadBodyBytes) {
        refuse(tooLarge(`The request body is over ${maxUploadBodyBytes} bytes`))
        return resume(Effect.void)
      }
      if (parser.write(chunk)) return resume(Effect.void)
      const go = () => {
        parser.off("drain", go)
        parser.off("close", go)
        resume(Effect.void)
      }
      parser.on("drain", go)
      parser.on("close", go)
    })
  const feed = request.stream.pipe(
    Stream.takeWhile(() => !refused),
    Stream.runForEach(write),
    Effect.andThen(
      Effect.sync(() => {
        if (!refused) parser.end()
      })
    ),
    Effect.catch((error) =>
      Effect.sync(() =>
        refuse(
          HttpServerError.isHttpServerError(error) && error.reason._tag === "RequestParseError" && error.reason.cause
            ? new Unanswerable(error)
            : errors.parameterInvalid("The request body ended before the multipart body did")
        )
      )
    )
  )
  yield* Effect.forkScoped(feed)
  return { file: awaitForm(file.promise), verdict: awaitForm(verdict.promise) }
})

/** Reads the upload in the request's body and records it as `creator`'s. */
export const ingestUpload = (creator: UploadCreator) =>
  Effect.gen(function* () {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = request.headers["content-length"]
    if (declared !== undefined && Number(declared) > maxUploadBodyBytes) {
      return yield* tooLarge(`The request body is over ${maxUploadBodyBytes} bytes`)
    }
    if (essence(request.headers["content-type"]) !== "multipart/form-data") {
      return yield* errors.parameterMissing("Send the file as multipart/form-data with one part named upload[file]")
    }
    const uploads = yield* Uploads
    return yield* Effect.scoped(
      Effect.gen(function* () {
        const form = yield* openForm(request)
        const part = yield* form.file
        // The file's bytes stop early only when the body was refused (or the client went away).
        const staged = yield* answerRefusals(uploads.stage(part.stream)).pipe(
          Effect.catchTag("UploadSourceFailed", () =>
            Effect.flatMap(form.verdict, () => Effect.die(new Error("the file part stopped early")))
          )
        )
        yield* form.verdict
        return yield* Effect.uninterruptible(uploads.create(creator, part.filename, staged))
      })
    )
  })

/** The descriptor of an upload (spec "Upload"). */
export const uploadDescriptor = (row: UploadRow) => ({
  public_id: row.public_id,
  filename: row.filename,
  content_type: row.content_type,
  byte_size: row.byte_size,
  created_at: row.created_at
})

/** A door's ingest: the caller's upload budget (counted before the body is read), the upload, its descriptor. */
export const uploadAtDoor = (creator: UploadCreator, callerKey: string) =>
  Effect.gen(function* () {
    yield* consume(yield* UploadRequestLimit, callerKey)
    return { upload: uploadDescriptor(yield* ingestUpload(creator)) }
  })
