// Rows of `inference_requests` (what a request asked for, and its actor's projection: status,
// usage, the current attempt's output, result, tombstone) and `inference_output_files`. After the
// insert at acceptance, only the inference request binding's row handlers write a row.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const InferenceStatus = Schema.Literals(["queued", "running", "completed", "failed", "canceled", "timed_out"])
export type InferenceStatus = typeof InferenceStatus.Type

const Json = Schema.Unknown

export const InferenceRequestRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  workspace_id: Schema.BigInt,
  creator_id: Schema.BigInt,
  workload: Schema.String,
  model: Json,
  request: Json,
  billing_subject: Schema.NullOr(Schema.String),
  status: InferenceStatus,
  usage_summary: Json,
  attempt_text: Schema.String,
  attempt_reasoning: Schema.String,
  result: Schema.NullOr(Json),
  tombstoned_at: Schema.NullOr(Schema.Date),
  /** A conversation's reply sample: hidden from the inference request doors. */
  asked_by_conversation_id: Schema.NullOr(Schema.BigInt),
  /** A run's model round (and its task key): hidden from the inference request doors too. */
  asked_by_run_id: Schema.NullOr(Schema.BigInt),
  asked_by_run_task_key: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type InferenceRequestRow = typeof InferenceRequestRow.Type

export const NewInferenceRequest = Schema.Struct({
  publicId: Schema.String,
  workspaceId: Schema.BigInt,
  creatorId: Schema.BigInt,
  workload: Schema.String,
  /** JSON text of the effective model. */
  modelJson: Schema.String,
  /** JSON text of what the provider calls are made of. */
  requestJson: Schema.String,
  billingSubject: Schema.NullOr(Schema.String),
  usageSummaryJson: Schema.String,
  askedByConversationId: Schema.optionalKey(Schema.NullOr(Schema.BigInt)),
  askedByRunId: Schema.optionalKey(Schema.NullOr(Schema.BigInt)),
  askedByRunTaskKey: Schema.optionalKey(Schema.NullOr(Schema.String)),
  now: Schema.Date
})
export type NewInferenceRequest = typeof NewInferenceRequest.Type

const insertRequest = Rows.one("InferenceRequests.insertRequest", {
  Request: NewInferenceRequest,
  Result: InferenceRequestRow,
  execute: (row, sql) => sql`
    INSERT INTO inference_requests (public_id, workspace_id, creator_id, workload, model, request, billing_subject,
                                    status, usage_summary, asked_by_conversation_id, asked_by_run_id,
                                    asked_by_run_task_key, created_at, updated_at)
    VALUES (${row.publicId}, ${row.workspaceId}, ${row.creatorId}, ${row.workload}, ${row.modelJson}::jsonb,
            ${row.requestJson}::jsonb, ${row.billingSubject}, 'queued', ${row.usageSummaryJson}::jsonb,
            ${row.askedByConversationId ?? null}, ${row.askedByRunId ?? null}, ${row.askedByRunTaskKey ?? null},
            ${row.now}, ${row.now})
    RETURNING *`
})

const byPublicId = Rows.maybe("InferenceRequests.findRequest", {
  Request: Schema.String,
  Result: InferenceRequestRow,
  execute: (publicId, sql) => sql`SELECT * FROM inference_requests WHERE public_id = ${publicId}`
})

/** The row, tombstoned or not (the caller judges what a tombstone answers). */
const findRequest = (publicId: string) => byPublicId(publicId)

export const ListFilter = Schema.Struct({
  workspaceId: Schema.BigInt,
  workload: Schema.NullOr(Schema.String),
  after: Schema.NullOr(Schema.String),
  order: Schema.Literals(["asc", "desc"]),
  limit: Schema.Number
})
export type ListFilter = typeof ListFilter.Type

/** A workspace's live (untombstoned) requests by public_id, after the cursor's id. */
const listRequests = Rows.all("InferenceRequests.listRequests", {
  Request: ListFilter,
  Result: InferenceRequestRow,
  execute: (filter, sql) => {
    const asc = filter.order === "asc"
    const after =
      filter.after === null ? sql`TRUE` : asc ? sql`public_id > ${filter.after}` : sql`public_id < ${filter.after}`
    const workload = filter.workload === null ? sql`TRUE` : sql`workload = ${filter.workload}`
    return sql`
      SELECT * FROM inference_requests
      WHERE workspace_id = ${filter.workspaceId} AND tombstoned_at IS NULL AND asked_by_conversation_id IS NULL
        AND asked_by_run_id IS NULL
        AND ${workload} AND ${after}
      ORDER BY public_id ${sql.literal(asc ? "ASC" : "DESC")}
      LIMIT ${filter.limit}`
  }
})

const setStatus = Effect.fnUntraced(function* (publicId: string, status: InferenceStatus, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE inference_requests SET status = ${status}, updated_at = ${now} WHERE public_id = ${publicId}`
})

/** Appends streamed text and reasoning to the current attempt's output. */
const appendOutput = Effect.fnUntraced(function* (publicId: string, text: string, reasoning: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests
    SET attempt_text = attempt_text || ${text}, attempt_reasoning = attempt_reasoning || ${reasoning}, updated_at = ${now}
    WHERE public_id = ${publicId}`
})

const dropOutput = Effect.fnUntraced(function* (publicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests SET attempt_text = '', attempt_reasoning = '', updated_at = ${now}
    WHERE public_id = ${publicId}`
})

const setUsageSummary = Effect.fnUntraced(function* (publicId: string, usageSummaryJson: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests SET usage_summary = ${usageSummaryJson}::jsonb, updated_at = ${now}
    WHERE public_id = ${publicId}`
})

/** The attempt began: status running, and the usage_summary counting it. */
const setRunning = Effect.fnUntraced(function* (publicId: string, usageSummaryJson: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests SET status = 'running', usage_summary = ${usageSummaryJson}::jsonb, updated_at = ${now}
    WHERE public_id = ${publicId}`
})

/**
 * Writes the result, adding the attempt's reasoning when it streamed any and, with `withText` on
 * a text generation, its streamed text as output_text (read in the statement, not by the caller).
 */
const setResult = Effect.fnUntraced(function* (publicId: string, resultJson: string, withText: boolean, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests
    SET result = ${resultJson}::jsonb
          || CASE WHEN ${withText} AND workload = 'text_generation'
                  THEN jsonb_build_object('output_text', attempt_text) ELSE '{}'::jsonb END
          || CASE WHEN attempt_reasoning <> '' THEN jsonb_build_object('reasoning', attempt_reasoning) ELSE '{}'::jsonb END,
        updated_at = ${now}
    WHERE public_id = ${publicId}`
})

const tombstone = Effect.fnUntraced(function* (publicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE inference_requests SET tombstoned_at = ${now}, updated_at = ${now}
    WHERE public_id = ${publicId} AND tombstoned_at IS NULL`
})

const deleteRequest = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM inference_requests WHERE public_id = ${publicId}`
})

export const OutputFileRow = Schema.Struct({
  index: Schema.Number,
  filename: Schema.String,
  content_type: Schema.String,
  bytes: Schema.Uint8Array
})
export type OutputFileRow = typeof OutputFileRow.Type

/** Keeps a file an attempt produced (replacing an earlier attempt's file of that index). */
const putOutputFile = Effect.fnUntraced(function* (requestPublicId: string, file: OutputFileRow) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO inference_output_files (request_id, index, filename, content_type, bytes)
    SELECT id, ${file.index}, ${file.filename}, ${file.content_type}, ${file.bytes}
    FROM inference_requests WHERE public_id = ${requestPublicId}
    ON CONFLICT (request_id, index) DO UPDATE
      SET filename = EXCLUDED.filename, content_type = EXCLUDED.content_type, bytes = EXCLUDED.bytes`
})

const outputFile = Rows.maybe("InferenceRequests.findOutputFile", {
  Request: Schema.Struct({ requestId: Schema.BigInt, index: Schema.Number }),
  Result: OutputFileRow,
  execute: ({ requestId, index }, sql) => sql`
    SELECT index, filename, content_type, bytes FROM inference_output_files
    WHERE request_id = ${requestId} AND index = ${index}`
})

const findOutputFile = (requestId: bigint, index: number) => outputFile({ requestId, index })

const readable = Rows.one("InferenceRequests.readableBy", {
  Request: Schema.Struct({ userId: Schema.BigInt, requestIds: Schema.Array(Schema.BigInt) }),
  Result: Schema.Struct({ readable: Schema.Boolean }),
  // The workspace visibility rule (domain Workspaces `canSee`) for the member `userId`: its human
  // (itself, or an agent's steward) is of the workspace's account, and owns it or it is account wide.
  execute: ({ userId, requestIds }, sql) => sql`
    SELECT EXISTS (
      SELECT 1 FROM inference_requests r
      JOIN workspaces w ON w.id = r.workspace_id
      JOIN users u ON u.id = ${userId}
      JOIN users h ON h.id = CASE WHEN u.kind = 'agent' THEN u.steward_id ELSE u.id END
      WHERE r.id = ANY(${[...requestIds]}::bigint[]) AND r.tombstoned_at IS NULL
        AND w.account_id = h.account_id AND w.state <> 'tombstoned'
        AND (w.owner_id = h.id OR w.access_mode = 'account_wide')
    ) AS readable`
})

/** Whether the member `userId` can read any of the (untombstoned) requests `requestIds`. */
const readableBy = (userId: bigint, requestIds: ReadonlyArray<bigint>) =>
  Effect.map(readable({ userId, requestIds }), (row) => row.readable)

export class InferenceRequestsRepository extends Context.Service<InferenceRequestsRepository>()(
  "@troupe/storage/InferenceRequestsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        insertRequest,
        findRequest,
        listRequests,
        setStatus,
        appendOutput,
        dropOutput,
        setUsageSummary,
        setRunning,
        setResult,
        tombstone,
        deleteRequest,
        putOutputFile,
        findOutputFile,
        readableBy
      })
    )
  }
) {
  static readonly layer = Layer.effect(InferenceRequestsRepository, InferenceRequestsRepository.make)
}
