// Rows of `uploads` (what each upload is, who made it), `upload_blobs` (one per distinct content,
// whose row lock orders putting a blob's file in place against taking it away), `upload_namings`
// (rows that name an upload) and `upload_representations` (thumbnails and previews rendered once).
// Rules (bounds, detection, names, who may read, when to reap) live in the domain.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const UploadContentType = Schema.Literals([
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "application/pdf",
  "audio/wav",
  "audio/mpeg",
  "audio/ogg",
  "audio/flac",
  "audio/mp4",
  "video/mp4",
  "video/webm",
  "text/plain",
  "application/octet-stream"
])
export type UploadContentType = typeof UploadContentType.Type

export const UploadRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  creator_user_id: Schema.NullOr(Schema.BigInt),
  creator_executor_id: Schema.NullOr(Schema.BigInt),
  filename: Schema.String,
  content_type: UploadContentType,
  byte_size: Schema.Number,
  sha256: Schema.String,
  created_at: Schema.Date
})
export type UploadRow = typeof UploadRow.Type

export const RepresentationKind = Schema.Literals(["thumbnail", "preview"])
export type RepresentationKind = typeof RepresentationKind.Type

/** A rendered representation, or (content_type null) bytes that could not be rendered. */
export const RepresentationRow = Schema.Struct({
  content_type: Schema.NullOr(Schema.Literals(["image/png", "image/jpeg"])),
  byte_size: Schema.NullOr(Schema.Number),
  width: Schema.NullOr(Schema.Number),
  height: Schema.NullOr(Schema.Number)
})
export type RepresentationRow = typeof RepresentationRow.Type

export const Naming = Schema.Struct({ holder_kind: Schema.String, holder_id: Schema.BigInt })
export type Naming = typeof Naming.Type

/**
 * Records the blob (or finds it) and holds its row lock for the rest of the transaction, so the
 * reaper cannot take the file away before the upload naming it commits.
 */
const lockBlob = Effect.fnUntraced(function* (sha256: string, byteSize: number, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO upload_blobs (sha256, byte_size, created_at) VALUES (${sha256}, ${byteSize}, ${now})
    ON CONFLICT (sha256) DO UPDATE SET byte_size = EXCLUDED.byte_size`
})

const insertUpload = Rows.one("Uploads.insertUpload", {
  Request: Schema.Struct({
    publicId: Schema.String,
    creatorUserId: Schema.NullOr(Schema.BigInt),
    creatorExecutorId: Schema.NullOr(Schema.BigInt),
    filename: Schema.String,
    contentType: UploadContentType,
    byteSize: Schema.Number,
    sha256: Schema.String,
    now: Schema.Date
  }),
  Result: UploadRow,
  execute: (upload, sql) => sql`
    INSERT INTO uploads (public_id, creator_user_id, creator_executor_id, filename, content_type, byte_size, sha256, created_at)
    VALUES (${upload.publicId}, ${upload.creatorUserId}, ${upload.creatorExecutorId}, ${upload.filename},
            ${upload.contentType}, ${upload.byteSize}, ${upload.sha256}, ${upload.now})
    RETURNING *`
})

const findUpload = Rows.maybe("Uploads.findUpload", {
  Request: Schema.String,
  Result: UploadRow,
  execute: (publicId, sql) => sql`SELECT * FROM uploads WHERE public_id = ${publicId}`
})

const namingsOf = Rows.all("Uploads.namingsOf", {
  Request: Schema.BigInt,
  Result: Naming,
  execute: (uploadId, sql) => sql`SELECT holder_kind, holder_id FROM upload_namings WHERE upload_id = ${uploadId}`
})

const representation = Rows.maybe("Uploads.findRepresentation", {
  Request: Schema.Struct({ sha256: Schema.String, kind: RepresentationKind }),
  Result: RepresentationRow,
  execute: ({ sha256, kind }, sql) => sql`
    SELECT content_type, byte_size, width, height FROM upload_representations
    WHERE sha256 = ${sha256} AND kind = ${kind}`
})

const findRepresentation = (sha256: string, kind: RepresentationKind) => representation({ sha256, kind })

/** Holds the blob's row against deletion for the rest of the transaction; false when it is gone. */
const shareBlob = Effect.fnUntraced(function* (sha256: string) {
  const sql = yield* SqlClient
  const rows = yield* sql`SELECT 1 FROM upload_blobs WHERE sha256 = ${sha256} FOR SHARE`
  return rows.length > 0
})

const insertRepresentation = Effect.fnUntraced(function* (
  sha256: string,
  kind: RepresentationKind,
  rendered: RepresentationRow,
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO upload_representations (sha256, kind, content_type, byte_size, width, height, created_at)
    VALUES (${sha256}, ${kind}, ${rendered.content_type}, ${rendered.byte_size}, ${rendered.width},
            ${rendered.height}, ${now})
    ON CONFLICT (sha256, kind) DO NOTHING`
})

const deleteExpired = Rows.all("Uploads.deleteExpired", {
  Request: Schema.Struct({ before: Schema.Date, limit: Schema.Number }),
  Result: Schema.Struct({ sha256: Schema.String }),
  execute: ({ before, limit }, sql) => sql`
    DELETE FROM uploads WHERE id IN (
      SELECT id FROM uploads u
      WHERE created_at < ${before}
        AND NOT EXISTS (SELECT 1 FROM upload_namings n WHERE n.upload_id = u.id)
      ORDER BY created_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING sha256`
})

/** Deletes up to `limit` uploads created before `before` that no row names; answers their blobs' digests. */
const deleteUnnamedBefore = (before: Date, limit: number) =>
  Effect.map(deleteExpired({ before, limit }), (rows) => rows.map((row) => row.sha256))

const unusedBlobs = Rows.all("Uploads.unusedBlobs", {
  Request: Schema.Number,
  Result: Schema.Struct({ sha256: Schema.String }),
  execute: (limit, sql) => sql`
    SELECT sha256 FROM upload_blobs b
    WHERE NOT EXISTS (SELECT 1 FROM uploads u WHERE u.sha256 = b.sha256)
    LIMIT ${limit}`
})

/** Blobs no upload names (left by the reaper, or by a deletion that did not finish). */
const listUnusedBlobs = (limit: number) => Effect.map(unusedBlobs(limit), (rows) => rows.map((row) => row.sha256))

/**
 * Takes the blob's row lock and deletes the row (and its representations' rows) when no upload
 * names the blob; answers whether it did. The caller removes the files before committing.
 */
const deleteBlobIfUnused = Effect.fnUntraced(function* (sha256: string) {
  const sql = yield* SqlClient
  const locked = yield* sql`SELECT 1 FROM upload_blobs WHERE sha256 = ${sha256} FOR UPDATE`
  if (locked.length === 0) return false
  const used = yield* sql`SELECT 1 FROM uploads WHERE sha256 = ${sha256} LIMIT 1`
  if (used.length > 0) return false
  yield* sql`DELETE FROM upload_blobs WHERE sha256 = ${sha256}`
  return true
})

/** Records that a row of `holderKind` names the upload (kept from the reaper while it does). */
const addNaming = Effect.fnUntraced(function* (uploadId: bigint, holderKind: string, holderId: bigint) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO upload_namings (upload_id, holder_kind, holder_id) VALUES (${uploadId}, ${holderKind}, ${holderId})
    ON CONFLICT DO NOTHING`
})

/** The holder row is gone: it names none of its uploads any more. */
const removeNamings = Effect.fnUntraced(function* (holderKind: string, holderId: bigint) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM upload_namings WHERE holder_kind = ${holderKind} AND holder_id = ${holderId}`
})

export class UploadsRepository extends Context.Service<UploadsRepository>()("@troupe/storage/UploadsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      lockBlob,
      insertUpload,
      findUpload,
      namingsOf,
      addNaming,
      removeNamings,
      findRepresentation,
      shareBlob,
      insertRepresentation,
      deleteUnnamedBefore,
      listUnusedBlobs,
      deleteBlobIfUnused
    })
  )
}) {
  static readonly layer = Layer.effect(UploadsRepository, UploadsRepository.make)
}
