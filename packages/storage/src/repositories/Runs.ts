// Rows of `runs` and `run_tasks`: a run's frozen settings and its actor's projection (status,
// attention, revision, stamps), each task's spec, standing, inbox address and result, and the
// executor inbox read over them. Inserted at creation (tasks also on append and expansion) with
// the actor; every later write is the run binding's.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import * as Rows from "./Rows.ts"
import { dropRunNamings, mayBindUploads, runNamesUpload, syncRunNamings } from "./RunUploadNamings.ts"

const Json = Schema.Unknown
const NullId = Schema.NullOr(Schema.BigInt)
const NullString = Schema.NullOr(Schema.String)
const NullDate = Schema.NullOr(Schema.Date)

export const RunStatus = Schema.Literals([
  "pending",
  "running",
  "paused",
  "needs_attention",
  "canceling",
  "completed",
  "canceled"
])
export type RunStatus = typeof RunStatus.Type

export const TaskStatus = Schema.Literals([
  "waiting",
  "needs_approval",
  "running",
  "dispatched",
  "awaiting_input",
  "completed",
  "failed",
  "canceled",
  "timed_out",
  "uncertain",
  "skipped"
])
export type TaskStatus = typeof TaskStatus.Type

export const TaskKind = Schema.Literals(["model_task", "tool_task", "await_task", "join_task"])
export type TaskKind = typeof TaskKind.Type

export const InboxKind = Schema.Literals(["tool_call", "ask", "approval"])
export type InboxKind = typeof InboxKind.Type

/** A run row with the public ids (and the default runner's display name) its trace shows. */
export const RunRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  workspace_id: Schema.BigInt,
  workspace_public_id: Schema.String,
  conversation_id: NullId,
  conversation_public_id: NullString,
  turn_public_id: NullString,
  creator_id: Schema.BigInt,
  creator_public_id: Schema.String,
  status: RunStatus,
  attention: Json,
  approval_mode: Schema.String,
  approval_rules: Json,
  prompt_mechanism: Schema.String,
  billing_subject: NullString,
  requester_speaker_id: NullId,
  requester_speaker_public_id: NullString,
  default_runner_id: NullId,
  default_runner_public_id: NullString,
  default_runner_display_name: NullString,
  model_selection: Json,
  fallback_models: Json,
  revision: Schema.Number,
  deliverable_task_key: Schema.String,
  created_at: Schema.Date,
  updated_at: Schema.Date,
  started_at: NullDate,
  paused_at: NullDate,
  completed_at: NullDate,
  tombstoned_at: NullDate
})
export type RunRow = typeof RunRow.Type

const runColumns = `r.*, w.public_id::text AS workspace_public_id, c.public_id::text AS conversation_public_id,
  u.public_id::text AS creator_public_id, s.public_id::text AS requester_speaker_public_id,
  e.public_id::text AS default_runner_public_id, e.display_name AS default_runner_display_name`

const runJoins = `
  JOIN workspaces w ON w.id = r.workspace_id
  JOIN users u ON u.id = r.creator_id
  LEFT JOIN conversations c ON c.id = r.conversation_id
  LEFT JOIN users s ON s.id = r.requester_speaker_id
  LEFT JOIN executors e ON e.id = r.default_runner_id`

const selectRun = `SELECT ${runColumns} FROM runs r ${runJoins}`

export const NewRun = Schema.Struct({
  publicId: Schema.String,
  workspaceId: Schema.BigInt,
  conversationId: NullId,
  turnPublicId: NullString,
  creatorId: Schema.BigInt,
  approvalMode: Schema.String,
  approvalRulesJson: Schema.String,
  promptMechanism: Schema.String,
  billingSubject: NullString,
  requesterSpeakerId: NullId,
  defaultRunnerId: NullId,
  modelSelectionJson: NullString,
  fallbackModelsJson: Schema.String,
  deliverableTaskKey: Schema.String,
  now: Schema.Date
})
export type NewRun = typeof NewRun.Type

/** Inserts a run, pending at revision 1; answers its row. */
const insertRun = Rows.one("Runs.insertRun", {
  Request: NewRun,
  Result: RunRow,
  execute: (run, sql) => sql`
    WITH r AS (
      INSERT INTO runs (public_id, workspace_id, conversation_id, turn_public_id, creator_id, status, approval_mode,
        approval_rules, prompt_mechanism, billing_subject, requester_speaker_id, default_runner_id, model_selection,
        fallback_models, revision, deliverable_task_key, created_at, updated_at)
      VALUES (${run.publicId}, ${run.workspaceId}, ${run.conversationId}, ${run.turnPublicId}, ${run.creatorId},
        'pending', ${run.approvalMode}, ${run.approvalRulesJson}::jsonb, ${run.promptMechanism}, ${run.billingSubject},
        ${run.requesterSpeakerId}, ${run.defaultRunnerId}, ${run.modelSelectionJson}::jsonb,
        ${run.fallbackModelsJson}::jsonb, 1, ${run.deliverableTaskKey}, ${run.now}, ${run.now})
      RETURNING *)
    SELECT ${sql.literal(runColumns)} FROM r ${sql.literal(runJoins)}`
})

/** The run, tombstoned or not (the caller judges what a tombstone answers). */
const findRun = Rows.maybe("Runs.findRun", {
  Request: Schema.String,
  Result: RunRow,
  execute: (publicId, sql) => sql`${sql.literal(selectRun)} WHERE r.public_id = ${publicId}::uuid`
})

const findRunById = Rows.maybe("Runs.findRunById", {
  Request: Schema.BigInt,
  Result: RunRow,
  execute: (id, sql) => sql`${sql.literal(selectRun)} WHERE r.id = ${id}`
})

/** What a hosted run's trace shows of its turn: the turn's answerer, and the model of the run's variant. */
export const HostTurnRow = Schema.Struct({ answering_user_public_id: NullString, model: Json })
export type HostTurnRow = typeof HostTurnRow.Type

const hostTurnOf = Rows.maybe("Runs.hostTurnOf", {
  Request: Schema.Struct({ turnPublicId: Schema.String, runPublicId: Schema.String }),
  Result: HostTurnRow,
  execute: ({ turnPublicId, runPublicId }, sql) => sql`
    SELECT u.public_id::text AS answering_user_public_id,
      (SELECT v.model FROM conversation_variants v
       WHERE v.turn_id = t.id AND v.run_public_id = ${runPublicId}::uuid ORDER BY v.id DESC LIMIT 1) AS model
    FROM conversation_turns t LEFT JOIN users u ON u.id = t.answerer_id
    WHERE t.public_id = ${turnPublicId}::uuid`
})

export const RunFilter = Schema.Struct({
  workspaceId: Schema.BigInt,
  /** null: every run; else standalone runs plus those hosted by these conversations. */
  conversationIds: Schema.NullOr(Schema.Array(Schema.BigInt)),
  /** null: any status. */
  statuses: Schema.NullOr(Schema.Array(Schema.String)),
  /** Only runs with attention standing. */
  attentionOnly: Schema.Boolean,
  /** The public id of the last run of the previous page. */
  after: NullString,
  order: Schema.Literals(["asc", "desc"]),
  limit: Schema.Number
})
export type RunFilter = typeof RunFilter.Type

/** A workspace's untombstoned runs by public id (UUIDv7: creation order), after the cursor's. */
const listRuns = Rows.all("Runs.listRuns", {
  Request: RunFilter,
  Result: RunRow,
  execute: (filter, sql) => {
    const asc = filter.order === "asc"
    const after =
      filter.after === null ? sql`TRUE` : sql`r.public_id ${sql.literal(asc ? ">" : "<")} ${filter.after}::uuid`
    const hosts =
      filter.conversationIds === null
        ? sql`TRUE`
        : sql`(r.conversation_id IS NULL OR r.conversation_id = ANY(${[...filter.conversationIds]}::bigint[]))`
    const statuses = filter.statuses === null ? sql`TRUE` : sql`r.status = ANY(${[...filter.statuses]}::text[])`
    const attention = filter.attentionOnly ? sql`r.attention IS NOT NULL AND r.attention <> 'null'::jsonb` : sql`TRUE`
    return sql`
      ${sql.literal(selectRun)}
      WHERE r.workspace_id = ${filter.workspaceId} AND r.tombstoned_at IS NULL
        AND ${hosts} AND ${statuses} AND ${attention} AND ${after}
      ORDER BY r.public_id ${sql.literal(asc ? "ASC" : "DESC")}
      LIMIT ${filter.limit}`
  }
})

export interface RunProjection {
  readonly status: RunStatus
  /** JSON text of `{reason, blocked_task_keys, blocked_task_overflow?}`, or null. */
  readonly attentionJson: string | null
  readonly revision: number
  readonly deliverableTaskKey: string
  readonly startedAt: Date | null
  readonly pausedAt: Date | null
  readonly completedAt: Date | null
  /** Written when present (null clears). */
  readonly defaultRunnerId?: bigint | null
  readonly now: Date
}

/** Writes the run actor's projection of the run. */
const setRunProjection = Effect.fnUntraced(function* (publicId: string, projection: RunProjection) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE runs SET status = ${projection.status}, attention = ${projection.attentionJson}::jsonb,
      revision = ${projection.revision}, deliverable_task_key = ${projection.deliverableTaskKey},
      started_at = ${projection.startedAt}, paused_at = ${projection.pausedAt}, completed_at = ${projection.completedAt},
      default_runner_id = CASE WHEN ${projection.defaultRunnerId !== undefined}
        THEN ${projection.defaultRunnerId ?? null}::bigint ELSE default_runner_id END,
      updated_at = ${projection.now}
    WHERE public_id = ${publicId}::uuid`
})

const tombstoneRun = Effect.fnUntraced(function* (publicId: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE runs SET tombstoned_at = ${now}, updated_at = ${now}
    WHERE public_id = ${publicId}::uuid AND tombstoned_at IS NULL`
})

/** Deletes a run: its tasks and the inference requests it asked go with it (foreign keys), its namings first. */
const deleteRun = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  yield* dropRunNamings(publicId)
  yield* sql`DELETE FROM runs WHERE public_id = ${publicId}::uuid`
})

/** A task row with the public ids of the executors it names and of its current round's request. */
export const TaskRow = Schema.Struct({
  run_id: Schema.BigInt,
  key: Schema.String,
  position: Schema.Number,
  kind: TaskKind,
  await_kind: NullString,
  status: TaskStatus,
  generation: Schema.Number,
  origin: Schema.String,
  visibility: Schema.String,
  mainline: Schema.Boolean,
  after: Json,
  on_failure: Schema.String,
  failure_resolution: NullString,
  error: Json,
  tool_name: NullString,
  tool_alias: NullString,
  tool_call_id: NullString,
  target_executor_id: NullId,
  target_executor_public_id: NullString,
  target_display_name: NullString,
  pool: Schema.Boolean,
  inbox_kind: Schema.NullOr(InboxKind),
  inbox_executor_id: NullId,
  inbox_executor_public_id: NullString,
  /** The addressee's kind (runner, agent_application, tool_provider): its row's role. */
  inbox_executor_kind: Schema.optionalKey(NullString),
  claimed_by_executor_id: NullId,
  claimed_by_public_id: NullString,
  claim_token_digest: NullString,
  claimed: Schema.Boolean,
  timeout_ms: Schema.NullOr(Schema.Number),
  deadline_at: NullDate,
  dispatched_at: NullDate,
  approval: Json,
  spec: Json,
  result: Json,
  inference_request_id: NullId,
  inference_request_public_id: NullString,
  usage: Json,
  created_at: Schema.Date,
  started_at: NullDate,
  completed_at: NullDate,
  updated_at: Schema.Date
})
export type TaskRow = typeof TaskRow.Type

/** Task rows of `source` (run_tasks, or the rows an UPDATE returned) as `TaskRow`s, `t` by alias. */
const selectTaskFrom = (source: string) => `
  SELECT t.*, te.public_id::text AS target_executor_public_id, te.display_name AS target_display_name,
    ie.public_id::text AS inbox_executor_public_id, ie.kind::text AS inbox_executor_kind,
    ce.public_id::text AS claimed_by_public_id, ir.public_id::text AS inference_request_public_id
  FROM ${source} t
  LEFT JOIN executors te ON te.id = t.target_executor_id
  LEFT JOIN executors ie ON ie.id = t.inbox_executor_id
  LEFT JOIN executors ce ON ce.id = t.claimed_by_executor_id
  LEFT JOIN inference_requests ir ON ir.id = t.inference_request_id`

const selectTask = selectTaskFrom("run_tasks")

export interface NewTask {
  readonly key: string
  readonly position: number
  readonly kind: string
  readonly awaitKind: string | null
  readonly origin: string
  readonly visibility: string
  readonly mainline: boolean
  /** JSON text of the keys it waits on. */
  readonly afterJson: string
  readonly onFailure: string
  readonly toolName: string | null
  readonly toolAlias: string | null
  readonly toolCallId: string | null
  /** The runner target's public id. */
  readonly targetExecutor: string | null
  readonly pool: boolean
  readonly timeoutMs: number | null
  /** JSON text of what the task read shows of its inputs. */
  readonly specJson: string
  readonly now: Date
}

const idText = (id: bigint | null | undefined) => (id === undefined ? undefined : id === null ? null : `${id}`)
const dateText = (date: Date | null) => (date === null ? null : date.toISOString())

/**
 * Inserts tasks of a run (waiting, generation 1) in one statement, and stamps the run's update;
 * the uploads their attachments bind are named.
 */
const insertTasks = Effect.fnUntraced(function* (runId: bigint, tasks: ReadonlyArray<NewTask>) {
  if (tasks.length === 0) return
  const sql = yield* SqlClient
  const rows = tasks.map((task) => ({
    key: task.key,
    position: task.position,
    kind: task.kind,
    await_kind: task.awaitKind,
    origin: task.origin,
    visibility: task.visibility,
    mainline: task.mainline,
    after: task.afterJson,
    on_failure: task.onFailure,
    tool_name: task.toolName,
    tool_alias: task.toolAlias,
    tool_call_id: task.toolCallId,
    target_executor: task.targetExecutor,
    pool: task.pool,
    timeout_ms: task.timeoutMs,
    spec: task.specJson,
    now: task.now.toISOString()
  }))
  yield* sql`
    WITH made AS (
      INSERT INTO run_tasks (run_id, key, position, kind, await_kind, status, generation, origin, visibility, mainline,
        after, on_failure, tool_name, tool_alias, tool_call_id, target_executor_id, pool, timeout_ms, spec, created_at,
        updated_at)
      SELECT ${runId}, n.key, n.position, n.kind, n.await_kind, 'waiting', 1, n.origin, n.visibility, n.mainline,
        n.after::jsonb, n.on_failure, n.tool_name, n.tool_alias, n.tool_call_id,
        (SELECT id FROM executors WHERE public_id = n.target_executor), n.pool,
        n.timeout_ms, n.spec::jsonb, n.now, n.now
      FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS n(key text, position integer, kind text,
        await_kind text, origin text, visibility text, mainline boolean, after text, on_failure text, tool_name text,
        tool_alias text, tool_call_id text, target_executor uuid, pool boolean, timeout_ms integer, spec text,
        now timestamptz)
      RETURNING created_at)
    UPDATE runs SET updated_at = GREATEST(updated_at, (SELECT max(created_at) FROM made)) WHERE id = ${runId}`
  if (tasks.some((task) => mayBindUploads(task.specJson))) yield* syncRunNamings(runId)
})

/** A task's standing as the run actor holds it; optional members are written only when present. */
export interface TaskChange {
  readonly key: string
  readonly status: TaskStatus
  readonly generation: number
  readonly failureResolution: string | null
  readonly errorJson: string | null
  readonly inboxKind: InboxKind | null
  /** Executors by public id. */
  readonly inboxExecutor: string | null
  readonly claimedByExecutor: string | null
  readonly claimTokenDigest: string | null
  readonly claimed: boolean
  readonly deadlineAt: Date | null
  /** When the row was listed (required while inboxKind is set): the inbox's order. */
  readonly dispatchedAt: Date | null
  readonly approvalJson: string | null
  readonly startedAt: Date | null
  readonly completedAt: Date | null
  /** The keys it waits on (an expansion rewires its round's dependents); absent keeps them. */
  readonly afterJson?: string
  readonly inferenceRequestId?: bigint | null
  /** Addressing a model's call after its round (null clears). */
  readonly targetExecutor?: string | null
  readonly pool?: boolean
  readonly timeoutMs?: number | null
}

const writeTasks = Rows.all("Runs.updateTasks", {
  Request: Schema.Struct({ runId: Schema.BigInt, changesJson: Schema.String, now: Schema.Date }),
  Result: TaskRow,
  // A member absent from an element's JSON (undefined in updateTasks) keeps the column.
  execute: ({ runId, changesJson, now }, sql) => sql`
    WITH changed AS (
      UPDATE run_tasks t SET status = c.status, generation = c.generation, failure_resolution = c.failure_resolution,
        error = c.error::jsonb, inbox_kind = c.inbox_kind,
        inbox_executor_id = (SELECT id FROM executors WHERE public_id = c.inbox_executor),
        claimed_by_executor_id = (SELECT id FROM executors WHERE public_id = c.claimed_by_executor),
        claim_token_digest = c.claim_token_digest,
        claimed = c.claimed, deadline_at = c.deadline_at, dispatched_at = c.dispatched_at,
        approval = c.approval::jsonb, started_at = c.started_at, completed_at = c.completed_at,
        after = CASE WHEN e.value -> 'after' IS NULL THEN t.after ELSE (e.value ->> 'after')::jsonb END,
        inference_request_id = CASE WHEN e.value -> 'inference_request_id' IS NULL
          THEN t.inference_request_id ELSE c.inference_request_id END,
        target_executor_id = CASE WHEN e.value -> 'target_executor' IS NULL
          THEN t.target_executor_id ELSE (SELECT id FROM executors WHERE public_id = c.target_executor) END,
        pool = CASE WHEN e.value -> 'pool' IS NULL THEN t.pool ELSE c.pool END,
        timeout_ms = CASE WHEN e.value -> 'timeout_ms' IS NULL THEN t.timeout_ms ELSE c.timeout_ms END,
        updated_at = ${now}
      FROM jsonb_array_elements(${changesJson}::jsonb) AS e(value),
        jsonb_to_record(e.value) AS c(key text, status text, generation integer, failure_resolution text, error text,
          inbox_kind text, inbox_executor uuid, claimed_by_executor uuid, claim_token_digest text,
          claimed boolean, deadline_at timestamptz, dispatched_at timestamptz, approval text,
          started_at timestamptz, completed_at timestamptz, inference_request_id bigint, target_executor uuid,
          pool boolean, timeout_ms integer)
      WHERE t.run_id = ${runId} AND t.key = c.key
      RETURNING t.*),
    stamped AS (
      UPDATE runs SET updated_at = GREATEST(updated_at, ${now}) WHERE id = ${runId} AND EXISTS (SELECT 1 FROM changed))
    ${sql.literal(selectTaskFrom("changed"))}
    WHERE t.claimed_by_executor_id IS NOT NULL`
})

/**
 * Writes many tasks' standing in one statement, and stamps the run's update. Answers the written
 * rows that hold a claim, as they now stand: what an executor's claim, extend or commit answers.
 */
const updateTasks = (runId: bigint, changes: ReadonlyArray<TaskChange>, now: Date) => {
  if (changes.length === 0) return Effect.succeed<ReadonlyArray<TaskRow>>([])
  const rows = changes.map((change) => ({
    key: change.key,
    status: change.status,
    generation: change.generation,
    failure_resolution: change.failureResolution,
    error: change.errorJson,
    inbox_kind: change.inboxKind,
    inbox_executor: change.inboxExecutor,
    claimed_by_executor: change.claimedByExecutor,
    claim_token_digest: change.claimTokenDigest,
    claimed: change.claimed,
    deadline_at: dateText(change.deadlineAt),
    dispatched_at: dateText(change.dispatchedAt),
    approval: change.approvalJson,
    after: change.afterJson,
    started_at: dateText(change.startedAt),
    completed_at: dateText(change.completedAt),
    inference_request_id: idText(change.inferenceRequestId),
    target_executor: change.targetExecutor,
    pool: change.pool,
    timeout_ms: change.timeoutMs
  }))
  return writeTasks({ runId, changesJson: JSON.stringify(rows), now })
}

/** Writes a task's result (JSON text), and stamps the run's update; the run names what it links. */
const setTaskResult = Effect.fnUntraced(function* (runId: bigint, key: string, resultJson: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    WITH changed AS (
      UPDATE run_tasks SET result = ${resultJson}::jsonb, updated_at = ${now}
      WHERE run_id = ${runId} AND key = ${key} RETURNING 1)
    UPDATE runs SET updated_at = GREATEST(updated_at, ${now}) WHERE id = ${runId} AND EXISTS (SELECT 1 FROM changed)`
  if (mayBindUploads(resultJson)) yield* syncRunNamings(runId)
})

/** Writes a task's usage block (JSON text). */
const setTaskUsage = Effect.fnUntraced(function* (runId: bigint, key: string, usageJson: string) {
  const sql = yield* SqlClient
  yield* sql`UPDATE run_tasks SET usage = ${usageJson}::jsonb WHERE run_id = ${runId} AND key = ${key}`
})

const taskByKey = Rows.maybe("Runs.findTask", {
  Request: Schema.Struct({ runId: Schema.BigInt, key: Schema.String }),
  Result: TaskRow,
  execute: ({ runId, key }, sql) => sql`${sql.literal(selectTask)} WHERE t.run_id = ${runId} AND t.key = ${key}`
})

const findTask = (runId: bigint, key: string) => taskByKey({ runId, key })

/** A run's tasks in authoring order. */
const listTasks = Rows.all("Runs.listTasks", {
  Request: Schema.BigInt,
  Result: TaskRow,
  execute: (runId, sql) => sql`${sql.literal(selectTask)} WHERE t.run_id = ${runId} ORDER BY t.position, t.key`
})

/** A task row with its run's public id. */
export const RunTaskRow = Schema.Struct({ ...TaskRow.fields, run_public_id: Schema.String })
export type RunTaskRow = typeof RunTaskRow.Type

/** The tasks of the runs named (run-backed variants read their runs' rounds), each run's in authoring order. */
const tasksOfRuns = Rows.all("Runs.tasksOfRuns", {
  Request: Schema.Array(Schema.String),
  Result: RunTaskRow,
  execute: (publicIds, sql) => sql`
    SELECT s.*, r.public_id::text AS run_public_id
    FROM (${sql.literal(selectTask)}) s JOIN runs r ON r.id = s.run_id
    WHERE r.public_id = ANY(${[...publicIds]}::uuid[])
    ORDER BY s.run_id, s.position, s.key`
})

/** A row of an executor inbox: a listed task with the public ids naming it and what it asks for. */
export const InboxRow = Schema.Struct({
  kind: Schema.NullOr(InboxKind),
  run_public_id: Schema.String,
  workspace_public_id: Schema.String,
  conversation_public_id: NullString,
  /** The hosting conversation's parent (null for a root conversation or a standalone run). */
  parent_public_id: NullString,
  task_key: Schema.String,
  task_kind: Schema.String,
  await_kind: NullString,
  status: TaskStatus,
  generation: Schema.Number,
  /** The inbox's started_at. */
  dispatched_at: NullDate,
  deadline_at: NullDate,
  timeout_ms: Schema.NullOr(Schema.Number),
  claimed: Schema.Boolean,
  pool: Schema.Boolean,
  target_executor_public_id: NullString,
  target_display_name: NullString,
  inbox_executor_public_id: NullString,
  /** The addressee's kind: its row's role. */
  inbox_executor_kind: NullString,
  claimed_by_public_id: NullString,
  tool_name: NullString,
  tool_alias: NullString,
  tool_call_id: NullString,
  /** The task's inputs (tool_input, prompt, options, multi, an approval's effect profile...). */
  spec: Json,
  approval: Json,
  /** When the run was paused (its clocks stand still since); null while they run. */
  run_paused_at: NullDate
})
export type InboxRow = typeof InboxRow.Type

const inboxColumns = `t.inbox_kind AS kind, r.public_id::text AS run_public_id,
  w.public_id::text AS workspace_public_id, c.public_id::text AS conversation_public_id,
  pc.public_id::text AS parent_public_id, t.key AS task_key,
  t.kind AS task_kind, t.await_kind, t.status, t.generation, t.dispatched_at, t.deadline_at, t.timeout_ms, t.claimed,
  t.pool, te.public_id::text AS target_executor_public_id, te.display_name AS target_display_name,
  ie.public_id::text AS inbox_executor_public_id, ie.kind::text AS inbox_executor_kind,
  ce.public_id::text AS claimed_by_public_id, t.tool_name,
  t.tool_alias, t.tool_call_id, t.spec, t.approval, r.paused_at AS run_paused_at`

const inboxJoins = `
  FROM run_tasks t
  JOIN runs r ON r.id = t.run_id
  JOIN workspaces w ON w.id = r.workspace_id
  LEFT JOIN conversations c ON c.id = r.conversation_id
  LEFT JOIN conversations pc ON pc.id = c.parent_id
  LEFT JOIN executors te ON te.id = t.target_executor_id
  LEFT JOIN executors ie ON ie.id = t.inbox_executor_id
  LEFT JOIN executors ce ON ce.id = t.claimed_by_executor_id`

export const InboxFilter = Schema.Struct({
  executorId: Schema.BigInt,
  /** The tool names the executor announces (pool rows it may see). */
  announcedToolNames: Schema.Array(Schema.String),
  isToolProvider: Schema.Boolean,
  /** A tool provider's reach: pool rows of runs whose creator it may serve (the discovery rule). */
  provider: Schema.optionalKey(
    Schema.Struct({
      accountId: Schema.BigInt,
      scope: Schema.Literals(["agent_private", "user_private", "account_wide"]),
      managerId: Schema.BigInt,
      agentId: Schema.NullOr(Schema.BigInt)
    })
  ),
  /** The last row of the previous page; without runPublicId, after every run's row at (dispatchedAt, key). */
  after: Schema.NullOr(
    Schema.Struct({ dispatchedAt: Schema.Date, runPublicId: Schema.optionalKey(Schema.String), key: Schema.String })
  ),
  limit: Schema.Number
})
export type InboxFilter = typeof InboxFilter.Type

/**
 * The rows listed for an executor: those addressed or claimed by it, and (a tool provider's)
 * unclaimed pool rows of a tool it announces; runs not tombstoned; by dispatch time, then key.
 */
const listInbox = Rows.all("Runs.listInbox", {
  Request: InboxFilter,
  Result: InboxRow,
  execute: (filter, sql) => {
    // A listed row names its addressee (a claimed one its claimant); an unclaimed pool row names
    // none and is found by its tool. Each branch is an index-ordered scan cut at the page size
    // before anything is joined, so a page costs the same however many rows are listed.
    const after =
      filter.after === null
        ? sql`TRUE`
        : filter.after.runPublicId === undefined
          ? sql`(dispatched_at, key) > (${filter.after.dispatchedAt}::timestamptz, ${filter.after.key})`
          : sql`(dispatched_at, key, run_id) > (${filter.after.dispatchedAt}::timestamptz, ${filter.after.key},
              COALESCE((SELECT id FROM runs WHERE public_id = ${filter.after.runPublicId}::uuid), 0))`
    const poolAfter =
      filter.after === null
        ? sql`TRUE`
        : filter.after.runPublicId === undefined
          ? sql`(pt.dispatched_at, pt.key) > (${filter.after.dispatchedAt}::timestamptz, ${filter.after.key})`
          : sql`(pt.dispatched_at, pt.key, pt.run_id) > (${filter.after.dispatchedAt}::timestamptz, ${filter.after.key},
              COALESCE((SELECT id FROM runs WHERE public_id = ${filter.after.runPublicId}::uuid), 0))`
    const addressed = sql`
      (SELECT run_id, key FROM run_tasks
       WHERE inbox_kind IS NOT NULL AND inbox_executor_id = ${filter.executorId} AND ${after}
       ORDER BY dispatched_at, key, run_id LIMIT ${filter.limit})`
    const provider = filter.provider
    const reach =
      provider === undefined
        ? sql`FALSE`
        : provider.scope === "account_wide"
          ? sql`TRUE`
          : provider.scope === "user_private"
            ? sql`(pr.creator_id = ${provider.managerId} OR pu.steward_id = ${provider.managerId})`
            : sql`pr.creator_id = ${provider.agentId ?? -1n}`
    const pool =
      filter.isToolProvider && provider !== undefined
        ? sql`UNION ALL
        (SELECT pt.run_id, pt.key FROM run_tasks pt
         JOIN runs pr ON pr.id = pt.run_id
         JOIN workspaces pw ON pw.id = pr.workspace_id
         JOIN users pu ON pu.id = pr.creator_id
         WHERE pt.inbox_kind IS NOT NULL AND pt.pool AND pt.claimed_by_executor_id IS NULL
           AND pt.tool_name = ANY(${[...filter.announcedToolNames]}::text[])
           AND pw.account_id = ${provider.accountId} AND ${reach}
           AND ${poolAfter}
         ORDER BY pt.dispatched_at, pt.key, pt.run_id LIMIT ${filter.limit})`
        : sql``
    return sql`
      WITH page AS (${addressed} ${pool})
      SELECT ${sql.literal(inboxColumns)} ${sql.literal(inboxJoins)}
      JOIN page p ON p.run_id = t.run_id AND p.key = t.key
      WHERE r.tombstoned_at IS NULL
      ORDER BY t.dispatched_at, t.key, t.run_id
      LIMIT ${filter.limit}`
  }
})

/** An inbox row, listed or not, with what the claim, commit and extend doors judge. */
export const InboxTaskRow = Schema.Struct({
  ...InboxRow.fields,
  run_id: Schema.BigInt,
  run_status: RunStatus,
  creator_id: Schema.BigInt,
  /** The creator's steward (an agent's; null for a human): whom a user_private provider may serve. */
  creator_steward_id: NullId,
  /** The run's workspace's account (a task of another account is not found). */
  account_id: Schema.BigInt,
  target_executor_id: NullId,
  inbox_executor_id: NullId,
  claimed_by_executor_id: NullId,
  claim_token_digest: NullString,
  failure_resolution: NullString
})
export type InboxTaskRow = typeof InboxTaskRow.Type

const inboxTask = Rows.maybe("Runs.findInboxTask", {
  Request: Schema.Struct({ runPublicId: Schema.String, key: Schema.String }),
  Result: InboxTaskRow,
  execute: ({ runPublicId, key }, sql) => sql`
    SELECT ${sql.literal(inboxColumns)}, r.id AS run_id, r.status AS run_status, r.creator_id,
      cu.steward_id AS creator_steward_id, w.account_id, t.target_executor_id, t.inbox_executor_id,
      t.claimed_by_executor_id, t.claim_token_digest, t.failure_resolution
    ${sql.literal(inboxJoins)}
    LEFT JOIN users cu ON cu.id = r.creator_id
    WHERE r.public_id = ${runPublicId}::uuid AND t.key = ${key} AND r.tombstoned_at IS NULL`
})

/** The task of an untombstoned run, whatever its inbox standing. */
const findInboxTask = (runPublicId: string, key: string) => inboxTask({ runPublicId, key })

/** The statuses of a run that has not ended. */
const liveStatuses = ["pending", "running", "paused", "needs_attention", "canceling"]

const PublicIdRow = Schema.Struct({ public_id: Schema.String })

/** The untombstoned runs a user created that have not ended (what removing an agent stops). */
const liveRunsOfCreator = Effect.fnUntraced(function* (userId: bigint) {
  const rows = yield* liveRunsOf(userId)
  return rows.map((row) => row.public_id)
})
const liveRunsOf = Rows.all("Runs.liveRunsOfCreator", {
  Request: Schema.BigInt,
  Result: PublicIdRow,
  execute: (userId, sql) => sql`
    SELECT public_id::text AS public_id FROM runs
    WHERE creator_id = ${userId} AND tombstoned_at IS NULL AND status = ANY(${liveStatuses}::text[])
    ORDER BY id`
})

/** The runs a conversation hosts that have not ended (what its tombstone stops). */
const liveRunsOfConversation = Effect.fnUntraced(function* (conversationId: bigint) {
  const rows = yield* liveHostedRuns(conversationId)
  return rows.map((row) => row.public_id)
})
const liveHostedRuns = Rows.all("Runs.liveRunsOfConversation", {
  Request: Schema.BigInt,
  Result: PublicIdRow,
  execute: (conversationId, sql) => sql`
    SELECT public_id::text AS public_id FROM runs
    WHERE conversation_id = ${conversationId} AND tombstoned_at IS NULL AND status = ANY(${liveStatuses}::text[])
    ORDER BY id`
})

/**
 * The live runs holding a dispatched, unclaimed tool row the executor could take: addressed to
 * it, or a pool row of a tool it announces (what revoking the executor fails or narrows).
 */
const runsWithRowsFor = Effect.fnUntraced(function* (executorId: bigint) {
  const rows = yield* runsWithRows(executorId)
  return rows.map((row) => row.public_id)
})
const runsWithRows = Rows.all("Runs.runsWithRowsFor", {
  Request: Schema.BigInt,
  Result: PublicIdRow,
  execute: (executorId, sql) => sql`
    SELECT DISTINCT r.id, r.public_id::text AS public_id
    FROM run_tasks t JOIN runs r ON r.id = t.run_id
    WHERE t.inbox_kind = 'tool_call' AND t.status = 'dispatched' AND NOT t.claimed
      AND r.tombstoned_at IS NULL AND r.status = ANY(${liveStatuses}::text[])
      AND (t.target_executor_id = ${executorId}
        OR (t.pool AND t.tool_name IN (
          SELECT tool->>'name' FROM executors e, jsonb_array_elements(e.announcement->'tools') tool
          WHERE e.id = ${executorId})))
    ORDER BY r.id`
})

/** Whether a run names the upload (RunUploadNamings: what its tasks bind). */
const namesUpload = runNamesUpload

/** The internal id of a run by its public id (tombstones included). */
const runIdOf = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ readonly id: bigint }>`SELECT id FROM runs WHERE public_id = ${publicId}::uuid`
  return rows[0]?.id
})

/** Names the hidden inference request a model task's current round asks. */
const setTaskRequest = Effect.fnUntraced(function* (runId: bigint, key: string, requestPublicId: string) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_tasks SET inference_request_id = (SELECT id FROM inference_requests WHERE public_id = ${requestPublicId}::uuid)
    WHERE run_id = ${runId} AND key = ${key}`
})

/**
 * A kernel call routed to the provider overriding its namespace: its row's tool name, alias and
 * call id as its provider reads them, and `spec` merged with `specPatchJson` (routed, its scope).
 */
const routeTask = Effect.fnUntraced(function* (
  runId: bigint,
  key: string,
  route: { readonly toolName: string; readonly toolAlias: string | null; readonly toolCallId: string },
  specPatchJson: string,
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_tasks SET tool_name = ${route.toolName}, tool_alias = ${route.toolAlias},
      tool_call_id = ${route.toolCallId}, spec = spec || ${specPatchJson}::jsonb, updated_at = ${now}
    WHERE run_id = ${runId} AND key = ${key}`
})

/** A wait's result is its target's. */
const copyTaskResult = Effect.fnUntraced(function* (runId: bigint, key: string, fromKey: string, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_tasks t SET result = f.result, updated_at = ${now}
    FROM run_tasks f WHERE t.run_id = ${runId} AND t.key = ${key} AND f.run_id = ${runId} AND f.key = ${fromKey}`
  yield* syncRunNamings(runId)
})

/** A cross-run wait's result is its target's, a task of another run (by public id). */
const copyForeignTaskResult = Effect.fnUntraced(function* (
  runId: bigint,
  key: string,
  from: { readonly run: string; readonly key: string },
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_tasks t SET result = f.result, updated_at = ${now}
    FROM run_tasks f JOIN runs r ON r.id = f.run_id
    WHERE t.run_id = ${runId} AND t.key = ${key} AND r.public_id = ${from.run}::uuid AND f.key = ${from.key}`
  yield* syncRunNamings(runId)
})

export const ForeignTask = Schema.Struct({ run: Schema.String, key: Schema.String })
export type ForeignTask = typeof ForeignTask.Type

const foreignTasksHeld = Rows.all("Runs.tasksOfEarlierRuns", {
  Request: Schema.Struct({
    conversationId: Schema.BigInt,
    beforeRunId: NullId,
    tasks: Schema.Array(ForeignTask)
  }),
  Result: ForeignTask,
  execute: ({ conversationId, beforeRunId, tasks }, sql) => sql`
    SELECT r.public_id::text AS run, t.key
    FROM jsonb_to_recordset(${JSON.stringify(tasks)}::jsonb) AS n(run uuid, key text)
    JOIN runs r ON r.public_id = n.run
    JOIN run_tasks t ON t.run_id = r.id AND t.key = n.key
    WHERE r.conversation_id = ${conversationId} AND r.tombstoned_at IS NULL
      AND (${beforeRunId}::bigint IS NULL OR r.id < ${beforeRunId}::bigint)`
})

/**
 * Which of `tasks` (a run's public id and a task key) are tasks of an untombstoned run hosted by the
 * conversation, created before the run `beforeRunId` (null: any run of it): what a wait on another
 * run's task may name.
 */
const tasksOfEarlierRuns = (request: {
  readonly conversationId: bigint
  readonly beforeRunId: bigint | null
  readonly tasks: ReadonlyArray<ForeignTask>
}) => {
  const tasks = request.tasks.filter((task) => isUuid(task.run))
  return tasks.length === 0 ? Effect.succeed([]) : foreignTasksHeld({ ...request, tasks })
}

/**
 * A completed round's answer on its task row: the text its inference request answered (output and
 * one text block), its reasoning and tool calls, and the attempt's usage.
 */
const recordRoundAnswer = Effect.fnUntraced(function* (
  runId: bigint,
  key: string,
  usageJson: string | null,
  now: Date
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_tasks t SET updated_at = ${now}, usage = COALESCE(${usageJson}::jsonb, t.usage),
      result = jsonb_build_object('output', COALESCE(i.result ->> 'output_text', ''),
        'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text', COALESCE(i.result ->> 'output_text', ''))))
        || CASE WHEN i.result ? 'tool_calls' THEN jsonb_build_object('tool_calls', i.result -> 'tool_calls') ELSE '{}'::jsonb END
        || CASE WHEN i.result ? 'reasoning' THEN jsonb_build_object('reasoning', i.result -> 'reasoning') ELSE '{}'::jsonb END
    FROM inference_requests i
    WHERE t.run_id = ${runId} AND t.key = ${key} AND i.id = t.inference_request_id`
})

/** A user's public id and steward (who decides a run's approvals). */
const userOf = Effect.fnUntraced(function* (userId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ readonly public_id: string; readonly steward_id: bigint | null }>`
    SELECT public_id::text, steward_id FROM users WHERE id = ${userId}`
  return rows[0]
})

/** The account of a user (a hosted run's answerer). */
const accountOfUser = Effect.fnUntraced(function* (userId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ readonly account_id: bigint }>`SELECT account_id FROM users WHERE id = ${userId}`
  return rows[0]?.account_id ?? -1n
})

/** Who gave a run of the account this billing subject first (the subject's owner), if anyone did. */
const billingSubjectOwner = Rows.maybe("Runs.billingSubjectOwner", {
  Request: Schema.Struct({ accountId: Schema.BigInt, subject: Schema.String }),
  Result: Schema.Struct({ creator_id: Schema.BigInt }),
  execute: (request, sql) => sql`
    SELECT r.creator_id FROM runs r JOIN workspaces w ON w.id = r.workspace_id
    WHERE w.account_id = ${request.accountId} AND r.billing_subject = ${request.subject}
    ORDER BY r.id LIMIT 1`
})

/** Sets (or clears, with null) the run's default runner by the runner's public id. */
const setDefaultRunner = Effect.fnUntraced(function* (publicId: string, executorPublicId: string | null, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE runs SET updated_at = ${now},
      default_runner_id = (SELECT id FROM executors WHERE public_id = ${executorPublicId}::uuid)
    WHERE public_id = ${publicId}::uuid`
})

/** A run inputs door row, with its author's public id. */
export const RunInputRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  run_id: Schema.BigInt,
  author_id: Schema.BigInt,
  author_public_id: Schema.String,
  text: Schema.String,
  delivery_mode: Schema.Literals(["queue", "steer"]),
  state: Schema.Literals(["pending", "steering", "consumed"]),
  queue_position: Schema.Number,
  lock_version: Schema.Number,
  deliver_at: NullDate,
  task_key: NullString,
  idempotency_key: NullString,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type RunInputRow = typeof RunInputRow.Type

const selectInput = `SELECT i.*, u.public_id::text AS author_public_id FROM run_inputs i JOIN users u ON u.id = i.author_id`

const inputsOf = Rows.all("Runs.listInputs", {
  Request: Schema.Struct({ runId: Schema.BigInt }),
  Result: RunInputRow,
  execute: ({ runId }, sql) =>
    sql`${sql.literal(selectInput)} WHERE i.run_id = ${runId} AND i.state <> 'consumed' ORDER BY i.queue_position`
})

/** A run's unconsumed door rows in queue order. */
const listInputs = (runId: bigint) => inputsOf({ runId })

const steersConsumedInto = Rows.all("Runs.steersOfTask", {
  Request: Schema.Struct({ runId: Schema.BigInt, taskKey: Schema.String }),
  Result: RunInputRow,
  execute: ({ runId, taskKey }, sql) =>
    sql`${sql.literal(selectInput)} WHERE i.run_id = ${runId} AND i.task_key = ${taskKey}
      AND i.delivery_mode = 'steer' AND i.state = 'consumed' ORDER BY i.updated_at, i.queue_position`
})

/** The steers consumed into a task (a round), in the order they landed. */
const steersOfTask = (runId: bigint, taskKey: string) => steersConsumedInto({ runId, taskKey })

const inputByPublicId = Rows.maybe("Runs.findInput", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: RunInputRow,
  execute: ({ publicId }, sql) => sql`${sql.literal(selectInput)} WHERE i.public_id = ${publicId}::uuid`
})

const findInput = (publicId: string) => inputByPublicId({ publicId })

/** A door row of the run's, inserted by its binding (`row` carries text, author and key). */
const insertInput = Effect.fnUntraced(function* (
  runId: bigint,
  input: {
    readonly publicId: string
    readonly authorId: bigint
    readonly text: string
    readonly steer: boolean
    readonly position: number
    readonly deliverAt: Date | null
    readonly idempotencyKey: string | null
    readonly now: Date
  }
) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO run_inputs (public_id, run_id, author_id, text, delivery_mode, state, queue_position, deliver_at,
      idempotency_key, created_at, updated_at)
    VALUES (${input.publicId}::uuid, ${runId}, ${input.authorId}, ${input.text}, ${input.steer ? "steer" : "queue"},
      ${input.steer ? "steering" : "pending"}, ${input.position}, ${input.deliverAt}, ${input.idempotencyKey},
      ${input.now}, ${input.now})`
})

const updateInput = Effect.fnUntraced(function* (
  publicId: string,
  fields: {
    readonly state: string
    readonly lockVersion: number
    readonly position: number
    readonly deliverAt: Date | null
    readonly text?: string | undefined
    readonly taskKey?: string | undefined
    readonly now: Date
  }
) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE run_inputs SET state = ${fields.state}, lock_version = ${fields.lockVersion},
      queue_position = ${fields.position}, deliver_at = ${fields.deliverAt},
      text = COALESCE(${fields.text ?? null}, text), task_key = COALESCE(${fields.taskKey ?? null}, task_key),
      updated_at = ${fields.now}
    WHERE public_id = ${publicId}::uuid`
})

const deleteInput = Effect.fnUntraced(function* (publicId: string) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM run_inputs WHERE public_id = ${publicId}::uuid`
})

export class RunsRepository extends Context.Service<RunsRepository>()("@troupe/storage/RunsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      insertRun,
      findRun,
      findRunById,
      hostTurnOf,
      listRuns,
      setRunProjection,
      tombstoneRun,
      deleteRun,
      insertTasks,
      updateTasks,
      setTaskResult,
      setTaskUsage,
      findTask,
      listTasks,
      tasksOfRuns,
      listInbox,
      findInboxTask,
      liveRunsOfCreator,
      liveRunsOfConversation,
      runsWithRowsFor,
      namesUpload,
      runIdOf,
      setTaskRequest,
      routeTask,
      copyTaskResult,
      copyForeignTaskResult,
      tasksOfEarlierRuns,
      recordRoundAnswer,
      accountOfUser,
      billingSubjectOwner,
      userOf,
      listInputs,
      findInput,
      steersOfTask,
      insertInput,
      updateInput,
      deleteInput,
      setDefaultRunner
    })
  )
}) {
  static readonly layer = Layer.effect(RunsRepository, RunsRepository.make)
}
