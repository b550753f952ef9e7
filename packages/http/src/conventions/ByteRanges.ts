// Reads of stored files, streamed from disk (an upload's bytes and representations) or from a row
// (inference output files, same rules, supplement "Cancellation, DELETE, files, estimate"): one
// `bytes=` range (a-b, a-, -n) answers 206 with Content-Range, a start past the end 416 with
// `Content-Range: bytes */<size>`, several or malformed ranges the whole file (200); a read with a
// strong ETag answers 304 with no body when If-None-Match names it (or is `*`), Range or not.
import { open } from "node:fs/promises"
import { errors } from "@troupe/contracts/Errors"
import { Effect } from "effect"
import { type HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelope } from "./ErrorEnvelope.ts"

/** What a Range header asks of a file of some size. `end` is inclusive. */
export type RangeAsked =
  | { readonly _tag: "Whole" }
  | { readonly _tag: "Part"; readonly start: number; readonly end: number }
  | { readonly _tag: "Unsatisfiable" }

const whole: RangeAsked = { _tag: "Whole" }
const unsatisfiable: RangeAsked = { _tag: "Unsatisfiable" }

/** The range a Range header asks of a file of `size` bytes (RFC 9110 §14.1.2, one range only). */
export const parseRange = (header: string | undefined, size: number): RangeAsked => {
  if (header === undefined) return whole
  const match = /^bytes=(?:(\d+)-(\d*)|-(\d+))$/i.exec(header.trim())
  if (match === null) return whole
  const [, first, last, suffix] = match
  if (suffix !== undefined) {
    const length = Number(suffix)
    return length === 0 || size === 0
      ? unsatisfiable
      : { _tag: "Part", start: Math.max(0, size - length), end: size - 1 }
  }
  const start = Number(first)
  const end = last === "" ? Number.POSITIVE_INFINITY : Number(last)
  if (end < start) return whole
  return start >= size ? unsatisfiable : { _tag: "Part", start, end: Math.min(end, size - 1) }
}

/** Whether an If-None-Match header names `etag` (weak comparison, RFC 9110 §13.1.2) or is `*`. */
export const noneMatch = (header: string | undefined, etag: string) => {
  if (header === undefined) return false
  if (header.trim() === "*") return true
  return (header.match(/(?:W\/)?"[^"]*"/g) ?? []).some((tag) => tag.replace(/^W\//, "") === etag)
}

/** A stored file as a read answers it: on disk (streamed), or bytes already read (a row's). */
export interface StoredFile {
  readonly content: { readonly path: string } | { readonly bytes: Uint8Array }
  readonly size: number
  readonly contentType: string
  /** The strong entity tag, quoted: `"<kind>-<sha256>"`; none: the read is not conditional. */
  readonly etag?: string | undefined
  readonly cacheControl: string
  /** Content-Disposition, when the read has one. */
  readonly disposition?: string | undefined
  /** Whether Range is honoured (representations ignore it). */
  readonly ranges: boolean
}

const openFile = (path: string) =>
  Effect.tryPromise({
    try: () => open(path, "r"),
    catch: (error) => error
  }).pipe(
    Effect.catchIf(
      (error) => (error as { code?: string }).code === "ENOENT",
      () => Effect.fail(errors.notFound())
    ),
    Effect.orDie
  )

/** The answer to a read of `file`: 304, 416, 206 or 200 with the file's bytes (streamed from disk). */
export const storedFileResponse = (request: HttpServerRequest.HttpServerRequest, file: StoredFile) =>
  Effect.gen(function* () {
    const cached = { ...(file.etag === undefined ? {} : { etag: file.etag }), "cache-control": file.cacheControl }
    if (file.etag !== undefined && noneMatch(request.headers["if-none-match"], file.etag)) {
      return HttpServerResponse.empty({ status: 304, headers: cached })
    }
    const asked = file.ranges ? parseRange(request.headers.range, file.size) : whole
    if (asked._tag === "Unsatisfiable") {
      return envelope(416, "range_not_satisfiable", `The file has ${file.size} bytes`, {
        "content-range": `bytes */${file.size}`
      })
    }
    const [start, end] = asked._tag === "Part" ? [asked.start, asked.end] : [0, file.size - 1]
    const length = end - start + 1
    const options = {
      status: asked._tag === "Part" ? 206 : 200,
      headers: {
        ...cached,
        "content-type": file.contentType,
        "content-length": String(length),
        ...(file.ranges ? { "accept-ranges": "bytes" } : {}),
        ...(asked._tag === "Part" ? { "content-range": `bytes ${start}-${end}/${file.size}` } : {}),
        ...(file.disposition === undefined ? {} : { "content-disposition": file.disposition })
      }
    }
    if (length === 0) return HttpServerResponse.uint8Array(new Uint8Array(0), options)
    if ("bytes" in file.content)
      return HttpServerResponse.uint8Array(file.content.bytes.subarray(start, end + 1), options)
    // Opened here, so a file gone since its row was read is a 404, not a broken answer.
    const handle = yield* openFile(file.content.path)
    return HttpServerResponse.raw(handle.createReadStream({ start, end, autoClose: true }), options)
  })
