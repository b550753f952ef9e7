// Inference requests of a workspace: create (judged against the catalog, inserted and its actor
// started in one transaction), list, read, cancel, DELETE and the replay of its items. Reads need
// the workspace visible; writes need write standing. Everything after acceptance is its actor's.
import { ActorHost } from "@troupe/actors/ActorHost"
import { inferenceRequestActor, uploadNamingKind } from "@troupe/actors/bindings/inferenceRequest"
import { type StreamPage, Streams } from "@troupe/actors/Streams"
import { BlobStore } from "@troupe/storage/BlobStore"
import { EventBus } from "@troupe/storage/EventBus"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import {
  type InferenceRequestRow,
  InferenceRequestsRepository,
  type OutputFileRow
} from "@troupe/storage/repositories/InferenceRequests"
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { accountCostUnit, admit, recordAdmission } from "../budgets/Admission.ts"
import { now } from "../kernel/Now.ts"
import type { RateLimit } from "../kernel/RateLimiter.ts"
import { Absent, BadParameter, type Invalid, type NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import { ModelCatalog } from "../models/ModelCatalog.ts"
import type { NamingRule } from "../uploads/UploadAccess.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"
import { emptyUsageSummary, makeInferenceAttempts } from "./Attempts.ts"
import { type Asker, type CreateMembers, judgeCreate } from "./CreateRules.ts"

/** The full projection (summary members, usage_summary, result once terminal). */
export interface InferenceRequestView {
  readonly public_id: string
  readonly workload: string
  readonly status: string
  readonly model: {
    readonly provider_id: string
    readonly model_ref: string
    readonly reasoning_enabled: boolean
    readonly reasoning_effort: string | null
  }
  readonly billing_subject: string | null
  readonly created_at: Date
  readonly updated_at: Date
  readonly usage_summary: Readonly<Record<string, unknown>>
  readonly result?: Readonly<Record<string, unknown>>
}

const viewOf = (row: InferenceRequestRow): InferenceRequestView => ({
  public_id: row.public_id,
  workload: row.workload,
  status: row.status,
  model: row.model as InferenceRequestView["model"],
  billing_subject: row.billing_subject,
  created_at: row.created_at,
  updated_at: row.updated_at,
  usage_summary: row.usage_summary as Readonly<Record<string, unknown>>,
  ...(row.result === null ? {} : { result: row.result as Readonly<Record<string, unknown>> })
})

/**
 * The per-caller request budget of each inference request door (6,000 a minute, supplement
 * "Uploads"); the scope is suffixed with the door's name, so each door counts apart.
 */
export const InferenceRequestLimit = Context.Reference<RateLimit>("@troupe/domain/inference/InferenceRequestLimit", {
  defaultValue: () => ({ scope: "inference_requests", limit: 6000, windowSeconds: 60 })
})

/** A file an attempt produced: its name, type and bytes. */
export type OutputFile = OutputFileRow

/** An input estimate (supplement "Cancellation, DELETE, files, estimate"). */
export interface InputEstimate {
  readonly input_tokens: number
  readonly tokenizer_exact: boolean
  readonly catalog_input_token_limit: number
  readonly model: InferenceRequestView["model"]
}

/** Whoever can read an inference request may read the uploads it names (supplement "Uploads"). */
export const inferenceNamingRules = Effect.gen(function* () {
  const requests = yield* InferenceRequestsRepository
  const db = yield* withRepositories(InferenceRequestsRepository)
  const rule: NamingRule = (reader, holderIds) => db(requests.readableBy(reader.userId, holderIds))
  return { [uploadNamingKind]: rule }
})

/** The binding of the inference request actor, over the catalog's providers; announcements ride the bus. */
export const inferenceRequestBinding = (
  catalog: ModelCatalog["Service"],
  blobs: BlobStore["Service"],
  bus: EventBus["Service"]
) => inferenceRequestActor(makeInferenceAttempts(catalog, blobs.blobPath), bus.publishOnCommit)

/** The one definition of the inference request actor the runtime holds (refs need that same one). */
export class InferenceRequestDefinition extends Context.Service<
  InferenceRequestDefinition,
  ReturnType<typeof inferenceRequestBinding>
>()("@troupe/domain/inference/InferenceRequestDefinition") {
  static readonly layer = Layer.effect(
    InferenceRequestDefinition,
    Effect.gen(function* () {
      return inferenceRequestBinding(yield* ModelCatalog, yield* BlobStore, yield* EventBus)
    })
  )
}

export class InferenceRequests extends Context.Service<
  InferenceRequests,
  {
    readonly create: (
      caller: Caller,
      workspaceId: string,
      members: CreateMembers
    ) => Effect.Effect<InferenceRequestView, Absent | NotPermitted | StateConflict | Invalid>
    /** What create would send, counted (no key, no write, no window gate). */
    readonly estimate: (
      caller: Caller,
      workspaceId: string,
      members: CreateMembers
    ) => Effect.Effect<InputEstimate, Absent | Invalid>
    readonly list: (
      caller: Caller,
      workspaceId: string,
      filter: {
        readonly workload?: string | undefined
        readonly after?: string | undefined
        readonly order: "asc" | "desc"
        readonly limit: number
      }
    ) => Effect.Effect<ReadonlyArray<InferenceRequestView>, Absent | BadParameter>
    readonly read: (
      caller: Caller,
      workspaceId: string,
      publicId: string
    ) => Effect.Effect<InferenceRequestView, Absent>
    readonly cancel: (
      caller: Caller,
      workspaceId: string,
      publicId: string
    ) => Effect.Effect<InferenceRequestView, Absent | NotPermitted | StateConflict>
    readonly remove: (
      caller: Caller,
      workspaceId: string,
      publicId: string
    ) => Effect.Effect<void, Absent | NotPermitted | StateConflict>
    /** An output file of a terminal request (image and speech workloads), by its 0-based index. */
    readonly outputFile: (
      caller: Caller,
      workspaceId: string,
      publicId: string,
      index: number
    ) => Effect.Effect<OutputFile, Absent>
    readonly events: (
      caller: Caller,
      workspaceId: string,
      publicId: string,
      after: string | undefined,
      limit: number
    ) => Effect.Effect<StreamPage, Absent | BadParameter>
    /**
     * The event stream of a request the caller may read, and the actor whose steps append to it
     * (the cable follows both); Absent like `read`.
     */
    readonly eventSource: (
      caller: Caller,
      workspaceId: string,
      publicId: string
    ) => Effect.Effect<
      { readonly stream: string; readonly actor: { readonly kind: string; readonly id: string } },
      Absent
    >
  }
>()("@troupe/domain/inference/InferenceRequests") {
  static readonly layer = Layer.effect(
    InferenceRequests,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const catalog = yield* ModelCatalog
      const workspaces = yield* Workspaces
      const streams = yield* Streams
      const requests = yield* InferenceRequestsRepository
      const actors = (yield* ActorHost).ref(yield* InferenceRequestDefinition)
      const uploadRows = yield* UploadsRepository
      const db = yield* withRepositories(InferenceRequestsRepository, UploadsRepository)
      /** The caller's uploads, found by public id, and an agent's standing fallback list. */
      const resolutionFor = (caller: Caller): Asker => ({
        userId: caller.user.id,
        find: (publicId) => db(uploadRows.findUpload(publicId)),
        standingFallbacks:
          caller.user.kind === "agent" ? (renderConfiguration(caller.user.configuration).fallback_models ?? []) : []
      })
      const definition = yield* InferenceRequestDefinition

      const notFound = () => new Absent({ code: "not_found", message: "No such inference request" })

      /**
       * The request of a workspace the caller sees (a tombstone is absent, and so are the hidden
       * requests a conversation's reply or a run's round asked, as the list leaves them out).
       */
      const visible = (workspaceRowId: bigint, publicId: string) =>
        Effect.gen(function* () {
          const row = isUuid(publicId) ? yield* db(requests.findRequest(publicId)) : undefined
          if (
            !row ||
            row.workspace_id !== workspaceRowId ||
            row.tombstoned_at !== null ||
            row.asked_by_conversation_id !== null ||
            row.asked_by_run_id !== null
          ) {
            return yield* notFound()
          }
          return row
        })

      const reread = (publicId: string) =>
        Effect.flatMap(db(requests.findRequest(publicId)), (row) =>
          row ? Effect.succeed(viewOf(row)) : Effect.fail(notFound())
        )

      return InferenceRequests.of({
        create: (caller, workspaceId, members) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.writable(caller, workspaceId)
            const judged = yield* judgeCreate(catalog, members, resolutionFor(caller))
            const publicId = newPublicId()
            const at = yield* now
            const row = yield* db(
              Effect.gen(function* () {
                const admitted = yield* admit(caller.user.id, at)
                const inserted = yield* requests.insertRequest({
                  publicId,
                  workspaceId: workspace.id,
                  creatorId: caller.user.id,
                  workload: judged.workload,
                  modelJson: JSON.stringify(judged.model),
                  requestJson: JSON.stringify(judged.stored),
                  billingSubject: judged.billingSubject,
                  usageSummaryJson: JSON.stringify(emptyUsageSummary(yield* accountCostUnit)),
                  now: at
                })
                yield* recordAdmission(inserted.id, admitted, at)
                for (const upload of judged.uploads)
                  yield* uploadRows.addNaming(upload.id, uploadNamingKind, inserted.id)
                yield* actors
                  .create(publicId, { publicId, routes: judged.routes, timeoutMs: judged.timeoutMs })
                  .pipe(Effect.orDie)
                return inserted
              }).pipe(sql.withTransaction)
            )
            return viewOf(row)
          }),
        estimate: (caller, workspaceId, members) =>
          Effect.gen(function* () {
            yield* workspaces.read(caller, workspaceId)
            const judged = yield* judgeCreate(catalog, members, resolutionFor(caller), false)
            return {
              input_tokens: judged.input.tokens,
              tokenizer_exact: judged.input.exact,
              catalog_input_token_limit: judged.input.window,
              model: judged.model
            }
          }),
        list: (caller, workspaceId, filter) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const rows = yield* db(
              requests.listRequests({
                workspaceId: workspace.id,
                workload: filter.workload ?? null,
                after: filter.after ?? null,
                order: filter.order,
                limit: filter.limit
              })
            )
            return rows.map(viewOf)
          }),
        read: (caller, workspaceId, publicId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            return viewOf(yield* visible(workspace.id, publicId))
          }),
        cancel: (caller, workspaceId, publicId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.writable(caller, workspaceId)
            yield* visible(workspace.id, publicId)
            yield* actors.send(publicId, { type: "inference.cancel" }).pipe(Effect.orDie)
            return yield* reread(publicId)
          }),
        remove: (caller, workspaceId, publicId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.writable(caller, workspaceId)
            yield* visible(workspace.id, publicId)
            const outcome = yield* actors.send(publicId, { type: "inference.tombstone" }).pipe(Effect.orDie)
            if (outcome._tag !== "Accepted") {
              return yield* new StateConflict({ code: "not_terminal", message: "The inference request has not ended" })
            }
          }),
        outputFile: (caller, workspaceId, publicId, index) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const row = yield* visible(workspace.id, publicId)
            const terminal = row.status !== "queued" && row.status !== "running"
            const file = terminal ? yield* db(requests.findOutputFile(row.id, index)) : undefined
            if (!file) return yield* new Absent({ code: "not_found", message: "No such output file" })
            return file
          }),
        events: (caller, workspaceId, publicId, after, limit) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            yield* visible(workspace.id, publicId)
            return yield* streams
              .read(`inference_request:${publicId}`, after === "" ? undefined : after, limit)
              .pipe(
                Effect.mapError(
                  () =>
                    new BadParameter({ code: "parameter_invalid", message: "after is not a cursor of this request" })
                )
              )
          }),
        eventSource: (caller, workspaceId, publicId) =>
          Effect.gen(function* () {
            const workspace = yield* workspaces.read(caller, workspaceId)
            const row = yield* visible(workspace.id, publicId)
            return { stream: definition.stream(row.public_id), actor: { kind: definition.kind, id: row.public_id } }
          })
      })
    })
  )
}
