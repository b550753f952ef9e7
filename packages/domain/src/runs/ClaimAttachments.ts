// Attachment reads under a claim (spec "Executor plane", runs supplement "Executor inbox"): the
// claimant of a tool task reads an upload bound to the task's run, its descriptor or its bytes,
// with the Claim-Token header as proof. Read-only: it writes nothing and renews nothing. Which
// uploads a run binds is the runs repository's `namesUpload` (docs/decisions.md).

import { BlobStore } from "@troupe/storage/BlobStore"
import { isUuid } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { type UploadRow, UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Clock, Context, Effect, Layer } from "effect"
import type { ExecutorCaller } from "../executors/Executors.ts"
import { Absent, BadParameter, StateConflict } from "../kernel/Refusals.ts"
import type { UploadFile } from "../uploads/Uploads.ts"
import { digestOf } from "./Tokens.ts"

/** What an attachment read names: the row (run and task key), the upload, and the claim token sent. */
export interface AttachmentRead {
  readonly runId: string
  readonly key: string
  readonly uploadId: string
  readonly token: string | undefined
}

export type AttachmentRefusal = Absent | BadParameter | StateConflict

export class ClaimAttachments extends Context.Service<
  ClaimAttachments,
  {
    /** The upload's descriptor. */
    readonly descriptor: (caller: ExecutorCaller, read: AttachmentRead) => Effect.Effect<UploadRow, AttachmentRefusal>
    /** The upload's original bytes, where they are on disk. */
    readonly bytes: (caller: ExecutorCaller, read: AttachmentRead) => Effect.Effect<UploadFile, AttachmentRefusal>
  }
>()("@troupe/domain/runs/ClaimAttachments") {
  static readonly layer = Layer.effect(
    ClaimAttachments,
    Effect.gen(function* () {
      const runs = yield* RunsRepository
      const uploads = yield* UploadsRepository
      const blobs = yield* BlobStore
      const db = yield* withRepositories(RunsRepository, UploadsRepository)

      const notFound = (message: string) => new Absent({ code: "not_found", message })

      /**
       * The proof, in the supplement's order: the task in this executor's account (404), the
       * Claim-Token sent (400 parameter_missing), this executor's current claim (409 not_claimant),
       * still dispatched and before its deadline (409 claim_inactive); then the upload bound to
       * the run (404 not_found).
       */
      const attachment = (caller: ExecutorCaller, read: AttachmentRead) =>
        Effect.gen(function* () {
          const executor = caller.row
          const row = isUuid(read.runId) ? yield* db(runs.findInboxTask(read.runId, read.key)) : undefined
          if (row === undefined || row.account_id !== executor.account_id) {
            return yield* notFound("No such inbox task")
          }
          if (read.token === undefined || read.token === "") {
            return yield* new BadParameter({ code: "parameter_missing", message: "Send the Claim-Token header" })
          }
          if (row.claimed_by_executor_id !== executor.id || row.claim_token_digest !== digestOf(read.token)) {
            return yield* new StateConflict({ code: "not_claimant", message: "Not the current claim of this task" })
          }
          const now = yield* Clock.currentTimeMillis
          // A paused run's clocks stand still: its deadlines shift by the pause so far.
          const deadline =
            row.deadline_at === null
              ? null
              : row.deadline_at.getTime() + (row.run_paused_at === null ? 0 : now - row.run_paused_at.getTime())
          if (row.status !== "dispatched" || (deadline !== null && deadline <= now)) {
            return yield* new StateConflict({ code: "claim_inactive", message: "The claim has settled or lapsed" })
          }
          const upload = isUuid(read.uploadId) ? yield* db(uploads.findUpload(read.uploadId)) : undefined
          if (upload === undefined || !(yield* db(runs.namesUpload(row.run_id, upload.id)))) {
            return yield* notFound("No such upload bound to this run")
          }
          return upload
        })

      return ClaimAttachments.of({
        descriptor: attachment,
        bytes: (caller, read) =>
          Effect.map(attachment(caller, read), (upload) => ({
            upload,
            path: blobs.blobPath(upload.sha256),
            contentType: upload.content_type,
            byteSize: upload.byte_size
          }))
      })
    })
  )
}
