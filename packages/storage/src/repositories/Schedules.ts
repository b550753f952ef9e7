// Rows of `schedules` and `schedule_executions`. A schedule row is inserted at creation with its
// actor; every later write is its binding's (the projection, an edit's members, the executions it
// dispatches). An execution's status is read from its child's first input, turn and run.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

const NullDate = Schema.NullOr(Schema.Date)

export const ScheduleRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  workspace_id: Schema.BigInt,
  workspace_public_id: Schema.String,
  conversation_id: Schema.BigInt,
  conversation_public_id: Schema.String,
  conversation_title: Schema.NullOr(Schema.String),
  /** The conversation's standing columns (levelOf reads them). */
  conversation_creator_id: Schema.BigInt,
  conversation_answerer_id: Schema.BigInt,
  conversation_access: Schema.Unknown,
  creator_id: Schema.BigInt,
  creator_public_id: Schema.String,
  name: Schema.NullOr(Schema.String),
  prompt: Schema.String,
  rule: Schema.Unknown,
  policy: Schema.Unknown,
  source_run_public_id: Schema.NullOr(Schema.String),
  source_task_key: Schema.NullOr(Schema.String),
  status: Schema.Literals(["active", "paused", "canceled", "completed"]),
  next_run_at: NullDate,
  last_enqueued_at: NullDate,
  last_input_public_id: Schema.NullOr(Schema.String),
  last_error_code: Schema.NullOr(Schema.String),
  lock_version: Schema.Number,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type ScheduleRow = typeof ScheduleRow.Type

const selectSchedule = `
  SELECT s.*, w.public_id::text AS workspace_public_id,
    c.public_id::text AS conversation_public_id, c.title AS conversation_title,
    c.creator_id AS conversation_creator_id, c.answerer_id AS conversation_answerer_id,
    c.access AS conversation_access, u.public_id::text AS creator_public_id
  FROM schedules s
  JOIN workspaces w ON w.id = s.workspace_id
  JOIN conversations c ON c.id = s.conversation_id
  JOIN users u ON u.id = s.creator_id`

export const NewSchedule = Schema.Struct({
  publicId: Schema.String,
  workspaceId: Schema.BigInt,
  conversationId: Schema.BigInt,
  creatorId: Schema.BigInt,
  name: Schema.NullOr(Schema.String),
  prompt: Schema.String,
  ruleJson: Schema.String,
  policyJson: Schema.String,
  sourceRunPublicId: Schema.NullOr(Schema.String),
  sourceTaskKey: Schema.NullOr(Schema.String),
  nextRunAt: Schema.Date,
  now: Schema.Date
})
export type NewSchedule = typeof NewSchedule.Type

const insertSchedule = Effect.fnUntraced(function* (row: NewSchedule) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO schedules (public_id, workspace_id, conversation_id, creator_id, name, prompt, rule, policy,
      source_run_public_id, source_task_key, status, next_run_at, created_at, updated_at)
    VALUES (${row.publicId}, ${row.workspaceId}, ${row.conversationId}, ${row.creatorId}, ${row.name}, ${row.prompt},
      ${row.ruleJson}::jsonb, ${row.policyJson}::jsonb, ${row.sourceRunPublicId}, ${row.sourceTaskKey}, 'active',
      ${row.nextRunAt}, ${row.now}, ${row.now})`
})

const findSchedule = Rows.maybe("Schedules.findSchedule", {
  Request: Schema.String,
  Result: ScheduleRow,
  execute: (publicId, sql) => sql`${sql.literal(selectSchedule)} WHERE s.public_id = ${publicId}::uuid`
})

export const ScheduleListing = Schema.Struct({
  workspaceId: Schema.BigInt,
  /** One conversation's schedules, else the workspace's (in live conversations). */
  conversationId: Schema.NullOr(Schema.BigInt),
  order: Schema.Literals(["asc", "desc"]),
  after: Schema.NullOr(Schema.String),
  limit: Schema.Number
})

const listSchedules = Rows.all("Schedules.listSchedules", {
  Request: ScheduleListing,
  Result: ScheduleRow,
  execute: (query, sql) => sql`
    ${sql.literal(selectSchedule)}
    WHERE s.workspace_id = ${query.workspaceId} AND c.state <> 'tombstoned'
      AND ${query.conversationId === null ? sql`TRUE` : sql`s.conversation_id = ${query.conversationId}`}
      AND ${
        query.after === null
          ? sql`TRUE`
          : query.order === "asc"
            ? sql`s.public_id > ${query.after}::uuid`
            : sql`s.public_id < ${query.after}::uuid`
      }
    ORDER BY s.public_id ${sql.literal(query.order === "asc" ? "ASC" : "DESC")}
    LIMIT ${query.limit}`
})

export interface Projection {
  readonly status: string
  readonly nextRunAt: Date | null
  readonly lockVersion: number
  readonly lastErrorCode: string | null
  readonly lastEnqueuedAt: Date | null
  readonly lastInputPublicId: string | null
  readonly now: Date
}

const setProjection = Effect.fnUntraced(function* (publicId: string, fields: Projection) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE schedules SET status = ${fields.status}, next_run_at = ${fields.nextRunAt},
      lock_version = ${fields.lockVersion}, last_error_code = ${fields.lastErrorCode},
      last_enqueued_at = ${fields.lastEnqueuedAt}, last_input_public_id = ${fields.lastInputPublicId},
      updated_at = ${fields.now}
    WHERE public_id = ${publicId}::uuid`
})

/** An edit's replaced members (absent ones keep their values). */
export interface ScheduleChanges {
  readonly name?: string | null
  readonly prompt?: string
  readonly rule?: unknown
  readonly policy?: unknown
}

const applyChanges = Effect.fnUntraced(function* (publicId: string, changes: ScheduleChanges) {
  const sql = yield* SqlClient
  const json = (value: unknown) => (value === undefined ? null : JSON.stringify(value))
  yield* sql`
    UPDATE schedules SET
      name = CASE WHEN ${changes.name !== undefined} THEN ${changes.name ?? null} ELSE name END,
      prompt = COALESCE(${changes.prompt ?? null}, prompt),
      rule = COALESCE(${json(changes.rule)}::jsonb, rule),
      policy = COALESCE(${json(changes.policy)}::jsonb, policy)
    WHERE public_id = ${publicId}::uuid`
})

/** A child conversation opened by a schedule: its parent, with no spawn key nor label. */
const setParent = Effect.fnUntraced(function* (childId: bigint, parentId: bigint) {
  const sql = yield* SqlClient
  yield* sql`UPDATE conversations SET parent_id = ${parentId} WHERE id = ${childId}`
})

const insertExecution = Effect.fnUntraced(function* (row: {
  readonly scheduleId: bigint
  readonly childConversationId: bigint
  readonly inputPublicId: string
  readonly scheduledFor: Date
  readonly now: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO schedule_executions (schedule_id, child_conversation_id, input_public_id, scheduled_for, created_at)
    VALUES (${row.scheduleId}, ${row.childConversationId}, ${row.inputPublicId}, ${row.scheduledFor}, ${row.now})`
})

export const ExecutionRow = Schema.Struct({
  id: Schema.BigInt,
  child_conversation_public_id: Schema.String,
  input_public_id: Schema.String,
  turn_public_id: Schema.NullOr(Schema.String),
  run_public_id: Schema.NullOr(Schema.String),
  scheduled_for: Schema.Date,
  created_at: Schema.Date,
  /** The first input's state, null before it lands and once withdrawn. */
  input_state: Schema.NullOr(Schema.String),
  withdrawn: Schema.Boolean,
  turn_status: Schema.NullOr(Schema.String)
})
export type ExecutionRow = typeof ExecutionRow.Type

const selectExecution = `
  SELECT e.id, c.public_id::text AS child_conversation_public_id, e.input_public_id::text AS input_public_id,
    t.public_id::text AS turn_public_id, v.run_public_id::text AS run_public_id, e.scheduled_for, e.created_at,
    i.state AS input_state, e.withdrawn_at IS NOT NULL AS withdrawn, t.status AS turn_status
  FROM schedule_executions e
  JOIN conversations c ON c.id = e.child_conversation_id
  LEFT JOIN conversation_inputs i ON i.public_id = e.input_public_id
  LEFT JOIN conversation_turns t ON t.conversation_id = e.child_conversation_id AND t.input_public_id = e.input_public_id
  LEFT JOIN conversation_variants v ON v.public_id = t.active_variant_public_id`

/** A page of the schedule's executions, oldest first, after the one whose first input is `after`. */
const listExecutions = Rows.all("Schedules.listExecutions", {
  Request: Schema.Struct({
    scheduleId: Schema.BigInt,
    /** The input public id of the execution the page follows (cursors carry no row id). */
    after: Schema.NullOr(Schema.String),
    limit: Schema.Number
  }),
  Result: ExecutionRow,
  execute: (query, sql) => sql`
    ${sql.literal(selectExecution)}
    WHERE e.schedule_id = ${query.scheduleId} AND ${
      query.after === null
        ? sql`TRUE`
        : sql`e.id > (SELECT a.id FROM schedule_executions a
                      WHERE a.schedule_id = ${query.scheduleId} AND a.input_public_id = ${query.after}::uuid)`
    }
    ORDER BY e.id ASC
    LIMIT ${query.limit}`
})

const lastExecution = Rows.maybe("Schedules.lastExecution", {
  Request: Schema.BigInt,
  Result: ExecutionRow,
  execute: (scheduleId, sql) =>
    sql`${sql.literal(selectExecution)} WHERE e.schedule_id = ${scheduleId} ORDER BY e.id DESC LIMIT 1`
})

/** The execution a child's settled turn ends, once: its schedule, its parent and who replied. */
export const SettledExecution = Schema.Struct({
  schedule_public_id: Schema.String,
  input_public_id: Schema.String,
  parent_public_id: Schema.String,
  creator_id: Schema.BigInt,
  creator_public_id: Schema.String
})

const settleExecution = Rows.maybe("Schedules.settleExecution", {
  Request: Schema.Struct({ childConversationId: Schema.BigInt, turnPublicId: Schema.String, now: Schema.Date }),
  Result: SettledExecution,
  execute: (request, sql) => sql`
    UPDATE schedule_executions e SET settled_at = ${request.now}
    FROM schedules s, conversations p, users u, conversation_turns t
    WHERE e.child_conversation_id = ${request.childConversationId} AND e.settled_at IS NULL
      AND t.public_id = ${request.turnPublicId}::uuid AND t.conversation_id = e.child_conversation_id
      AND t.input_public_id = e.input_public_id
      AND s.id = e.schedule_id AND p.id = s.conversation_id AND u.id = s.creator_id
    RETURNING s.public_id::text AS schedule_public_id, e.input_public_id::text AS input_public_id,
      p.public_id::text AS parent_public_id, s.creator_id, u.public_id::text AS creator_public_id`
})

/**
 * Marks an execution withdrawn while its first input is not consumed (queued, or not yet landed):
 * answers its child conversation, else nothing (the input was consumed into a turn).
 */
const withdrawExecution = Rows.maybe("Schedules.withdrawExecution", {
  Request: Schema.Struct({ inputPublicId: Schema.String, now: Schema.Date }),
  Result: Schema.Struct({ conversation_public_id: Schema.String }),
  execute: (request, sql) => sql`
    UPDATE schedule_executions e SET withdrawn_at = ${request.now}
    FROM conversations c
    WHERE e.input_public_id = ${request.inputPublicId}::uuid AND c.id = e.child_conversation_id
      AND NOT EXISTS (SELECT 1 FROM conversation_inputs i
                      WHERE i.public_id = e.input_public_id AND i.state = 'consumed')
    RETURNING c.public_id::text AS conversation_public_id`
})

/**
 * Withdraws the unsettled execution of a child conversation that ends (its tombstone) before its
 * first reply settled: answers the schedule and first input to tell, else nothing.
 */
const endExecutionOfChild = Rows.maybe("Schedules.endExecutionOfChild", {
  Request: Schema.Struct({ childPublicId: Schema.String, now: Schema.Date }),
  Result: Schema.Struct({ schedule_public_id: Schema.String, input_public_id: Schema.String }),
  execute: (request, sql) => sql`
    UPDATE schedule_executions e SET withdrawn_at = ${request.now}
    FROM conversations c, schedules s
    WHERE c.public_id = ${request.childPublicId}::uuid AND e.child_conversation_id = c.id
      AND e.settled_at IS NULL AND e.withdrawn_at IS NULL AND s.id = e.schedule_id
    RETURNING s.public_id::text AS schedule_public_id, e.input_public_id::text AS input_public_id`
})

export class SchedulesRepository extends Context.Service<SchedulesRepository>()("@troupe/storage/SchedulesRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      insertSchedule,
      findSchedule,
      listSchedules,
      setProjection,
      applyChanges,
      setParent,
      insertExecution,
      listExecutions,
      lastExecution,
      settleExecution,
      withdrawExecution,
      endExecutionOfChild
    })
  )
}) {
  static readonly layer = Layer.effect(SchedulesRepository, SchedulesRepository.make)
}
