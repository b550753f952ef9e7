// Uploads (spec "Upload", "Member: uploads", supplement "Uploads"): staging a file's bytes into the
// blob store under the 100 MiB bound while its content type is judged, recording the upload
// (creator, sanitized and corrected filename, detected type, size, digest), the reads (descriptor
// for the creator, bytes and representations for whoever UploadAccess lets read them, rendered
// once and kept), and the hourly reaper of uploads no row names, 24 hours after their creation.
// Reading the multipart body that carries the file is the http layer's business.
import type { Readable } from "node:stream"
import { hourlyReaper } from "@troupe/actors/RunnerLoop"
import { BlobStore, type StagedBlob } from "@troupe/storage/BlobStore"
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import {
  type RepresentationKind,
  type UploadContentType,
  type UploadRow,
  UploadsRepository
} from "@troupe/storage/repositories/Uploads"
import { Context, Data, Duration, Effect, Layer, type Scope } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"
import type { RateLimit } from "../kernel/RateLimiter.ts"
import { Absent, TooLarge } from "../kernel/Refusals.ts"
import { detectContentType, TextSniffer } from "./Detection.ts"
import { hasRepresentations, render, representationKinds } from "./Representations.ts"
import { isCreator, mayReadBytes, NamingRules, type UploadReader } from "./UploadAccess.ts"
import { uploadFilename } from "./UploadNames.ts"

export type { RepresentationKind, UploadContentType, UploadRow }

/** The application file bound (upload_bound): a file passing it is refused. */
export const maxUploadBytes = 104_857_600

/** The front-proxy body cap: a request declaring a longer body is refused before it is read. */
export const maxUploadBodyBytes = 110 * 1024 * 1024

/** An upload no row names goes this long after its creation. */
export const unnamedUploadLife = Duration.hours(24)

/** The per-caller request budget of the upload routes (600 per minute); a server may provide another. */
export const UploadRequestLimit = Context.Reference<RateLimit>("@troupe/domain/uploads/UploadRequestLimit", {
  defaultValue: () => ({ scope: "uploads", limit: 600, windowSeconds: 60 })
})

/** Who made an upload: a member (an agent, or a human at the member or browser door), or an executor. */
export type UploadCreator =
  | { readonly kind: "member"; readonly userId: bigint }
  | { readonly kind: "executor"; readonly executorId: bigint }

/** A file's bytes staged and judged, not yet an upload. */
export interface StagedUpload {
  readonly blob: StagedBlob
  readonly contentType: UploadContentType
}

/** The file's bytes stopped before their end (the client went away, the body could not be read). */
export class UploadSourceFailed extends Data.TaggedError("UploadSourceFailed")<{ readonly cause: unknown }> {}

/** What an upload's bytes or representation answer with: where its file is, and what it holds. */
export interface UploadFile {
  readonly upload: UploadRow
  readonly path: string
  readonly contentType: string
  readonly byteSize: number
}

const notFound = () => new Absent({ code: "not_found", message: "Not found" })

const tooLarge = () =>
  new TooLarge({ code: "content_too_large", message: `The file is over the ${maxUploadBytes}-byte upload bound` })

const unavailable = () =>
  new Absent({ code: "representation_unavailable", message: "This upload has no such representation" })

/** Uploads deleted (and blobs examined) per statement of a reaper pass. */
const reapBatch = 500

export class Uploads extends Context.Service<
  Uploads,
  {
    /** Streams a file's bytes into the blob store (removed when the scope closes unless `create` kept them). */
    readonly stage: (source: Readable) => Effect.Effect<StagedUpload, TooLarge | UploadSourceFailed, Scope.Scope>
    /** Records a staged file as an upload of `creator`, named after `declaredFilename`. */
    readonly create: (
      creator: UploadCreator,
      declaredFilename: string | undefined,
      staged: StagedUpload
    ) => Effect.Effect<UploadRow>
    /** The descriptor: its creator's alone. */
    readonly descriptor: (reader: UploadReader, publicId: string) => Effect.Effect<UploadRow, Absent>
    /** The original bytes, for whoever may read them. */
    readonly bytes: (reader: UploadReader, publicId: string) => Effect.Effect<UploadFile, Absent>
    /** A thumbnail or preview, rendered on the first read and kept. */
    readonly representation: (
      reader: UploadReader,
      publicId: string,
      kind: RepresentationKind
    ) => Effect.Effect<UploadFile, Absent>
    /** One pass of the reaper: uploads no row names past their day, then blobs no upload names. */
    readonly reap: Effect.Effect<{ readonly uploads: number; readonly blobs: number }>
  }
>()("@troupe/domain/uploads/Uploads") {
  static readonly layer = Layer.effect(
    Uploads,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)
      const repository = yield* UploadsRepository
      const blobs = yield* BlobStore
      /** The naming features' read rules, as the server provided them to this layer. */
      const namingRules = yield* NamingRules

      const stage = (source: Readable) =>
        Effect.gen(function* () {
          const sniffer = new TextSniffer()
          const blob = yield* blobs
            .stage(source, { maxBytes: maxUploadBytes, inspect: (chunk) => sniffer.push(chunk) })
            .pipe(
              Effect.catchTags({
                BlobTooLarge: () => Effect.fail(tooLarge()),
                BlobSourceFailed: (failed) => Effect.fail(new UploadSourceFailed({ cause: failed.cause }))
              })
            )
          const contentType = yield* Effect.promise(() => detectContentType(blob.path, sniffer))
          return { blob, contentType } satisfies StagedUpload
        }).pipe(Effect.withSpan("Uploads.stage"))

      const create = (creator: UploadCreator, declaredFilename: string | undefined, staged: StagedUpload) =>
        Effect.gen(function* () {
          const at = yield* now
          const { blob, contentType } = staged
          // Under the blob's row lock the reaper cannot take the file away until this commits.
          return yield* db(
            Effect.gen(function* () {
              yield* repository.lockBlob(blob.sha256, blob.byteSize, at)
              yield* blobs.keep(blob)
              return yield* repository.insertUpload({
                publicId: newPublicId(),
                creatorUserId: creator.kind === "member" ? creator.userId : null,
                creatorExecutorId: creator.kind === "executor" ? creator.executorId : null,
                filename: uploadFilename(declaredFilename, contentType),
                contentType,
                byteSize: blob.byteSize,
                sha256: blob.sha256,
                now: at
              })
            }).pipe(sql.withTransaction)
          )
        }).pipe(Effect.withSpan("Uploads.create"))

      const find = (publicId: string) =>
        Effect.flatMap(isUuid(publicId) ? db(repository.findUpload(publicId)) : Effect.undefined, (row) =>
          row === undefined ? Effect.fail(notFound()) : Effect.succeed(row)
        )

      /** The upload, when `reader` may read its bytes; else not found, as if it did not exist. */
      const readable = (reader: UploadReader, publicId: string) =>
        Effect.gen(function* () {
          const upload = yield* find(publicId)
          const may = yield* mayReadBytes(namingRules, reader, upload, db(repository.namingsOf(upload.id)))
          if (!may) return yield* notFound()
          return upload
        })

      const descriptor = (reader: UploadReader, publicId: string) =>
        Effect.flatMap(find(publicId), (upload) =>
          isCreator(reader, upload) ? Effect.succeed(upload) : Effect.fail(notFound())
        )

      const bytes = (reader: UploadReader, publicId: string) =>
        Effect.map(readable(reader, publicId), (upload) => ({
          upload,
          path: blobs.blobPath(upload.sha256),
          contentType: upload.content_type,
          byteSize: upload.byte_size
        }))

      /** Renders the representation and keeps it (or keeps that it cannot be rendered). */
      const renderAndKeep = (upload: UploadRow, kind: RepresentationKind) =>
        Effect.gen(function* () {
          const rendered = yield* render(blobs.blobPath(upload.sha256), upload.content_type, kind)
          const at = yield* now
          // Held against the reaper while the file is written; a blob already gone keeps nothing.
          yield* db(
            Effect.gen(function* () {
              if (!(yield* repository.shareBlob(upload.sha256))) return
              if (rendered !== undefined) yield* blobs.writeRepresentation(upload.sha256, kind, rendered.bytes)
              yield* repository.insertRepresentation(
                upload.sha256,
                kind,
                rendered === undefined
                  ? { content_type: null, byte_size: null, width: null, height: null }
                  : {
                      content_type: rendered.contentType,
                      byte_size: rendered.bytes.byteLength,
                      width: rendered.width,
                      height: rendered.height
                    },
                at
              )
            }).pipe(sql.withTransaction)
          )
          return rendered === undefined
            ? undefined
            : { contentType: rendered.contentType, byteSize: rendered.bytes.byteLength }
        })

      const representation = (reader: UploadReader, publicId: string, kind: RepresentationKind) =>
        Effect.gen(function* () {
          const upload = yield* readable(reader, publicId)
          if (!hasRepresentations(upload.content_type)) return yield* unavailable()
          const kept = yield* db(repository.findRepresentation(upload.sha256, kind))
          const made =
            kept === undefined
              ? yield* renderAndKeep(upload, kind)
              : kept.content_type === null
                ? undefined
                : { contentType: kept.content_type, byteSize: kept.byte_size ?? 0 }
          if (made === undefined) return yield* unavailable()
          return { upload, path: blobs.representationPath(upload.sha256, kind), ...made } satisfies UploadFile
        }).pipe(Effect.withSpan("Uploads.representation", { attributes: { kind } }))

      /** Deletes a blob no upload names: its row, then its files, before the deletion commits. */
      const removeBlob = (sha256: string) =>
        db(
          Effect.gen(function* () {
            const deleted = yield* repository.deleteBlobIfUnused(sha256)
            if (deleted) yield* blobs.remove(sha256, representationKinds)
            return deleted
          }).pipe(sql.withTransaction)
        )

      const reap = Effect.gen(function* () {
        const at = yield* now
        const before = new Date(at.getTime() - Duration.toMillis(unnamedUploadLife))
        let uploads = 0
        for (;;) {
          const deleted = yield* db(repository.deleteUnnamedBefore(before, reapBatch))
          uploads += deleted.length
          if (deleted.length < reapBatch) break
        }
        let blobsRemoved = 0
        for (;;) {
          const unused = yield* db(repository.listUnusedBlobs(reapBatch))
          for (const sha256 of unused) if (yield* removeBlob(sha256)) blobsRemoved++
          if (unused.length < reapBatch) break
        }
        yield* blobs.sweepTemporary(at)
        return { uploads, blobs: blobsRemoved }
      }).pipe(Effect.withSpan("Uploads.reap"))

      yield* hourlyReaper("upload reaper", reap)

      return Uploads.of({ stage, create, descriptor, bytes, representation, reap })
    })
  )
}
