// The one statement that writes an actor's step after its row handlers: the seq-fenced snapshot
// and the elements of its context parts that changed, timer settings and cancellations, job rows,
// outbox items under their stream head, the journal row and the bus notices (NOTIFYed, or queued
// in `actor_notices`), each a data-modifying CTE gated on the fence, so a step costs one round
// trip and, outside a transaction, is atomic on its own. And the sender's statement for queued
// notices.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Fragment } from "effect/sql/Statement"
import type { JournalWrite, SnapshotRow } from "./Actors.ts"

/** A bus notice: NOTIFYed on `channel` (PostgreSQL holds a NOTIFY until its transaction commits). */
export interface Notice {
  readonly channel: string
  readonly payload: string
}

export interface StepWrite {
  readonly kind: string
  readonly actorId: string
  /** The actor's seq once the step is written. */
  readonly seq: bigint
  /**
   * The snapshot the step leaves, written only where the row's seq is still `expectedSeq` (the
   * fence); absent at creation, whose transaction inserted the row itself.
   */
  readonly snapshot:
    | {
        readonly expectedSeq: bigint
        readonly version: number
        readonly status: SnapshotRow["status"]
        readonly stateValue: string
        readonly snapshot: unknown
      }
    | undefined
  readonly at: Date
  /**
   * The elements of the actor's context parts (`actor_parts`) the step changed: each upserted by
   * its key at its position, and the keys no longer in their part deleted (creation upserts all).
   */
  readonly parts: {
    readonly upserts: ReadonlyArray<{
      readonly part: string
      readonly key: string
      readonly position: number
      readonly value: unknown
    }>
    readonly removed: ReadonlyArray<{ readonly part: string; readonly key: string }>
  }
  /** Timers set (by id, at most once each) and cancelled; `clearTimers` deletes them all. */
  readonly setTimers: ReadonlyArray<{ readonly timerId: string; readonly event: unknown; readonly dueAt: Date }>
  readonly cancelTimers: ReadonlyArray<string>
  readonly clearTimers: boolean
  readonly jobs: ReadonlyArray<{ readonly actionIndex: number; readonly name: string; readonly params: unknown }>
  /** Items appended to `stream` in order, numbered after its head. */
  readonly outbox: {
    readonly stream: string
    readonly resourceType: string
    readonly items: ReadonlyArray<{ readonly publicId: string; readonly type: string; readonly payload: unknown }>
  }
  readonly journal: Pick<JournalWrite, "event" | "fromState" | "toState" | "actions">
  /**
   * NOTIFYed by the statement, in order (PostgreSQL holds them until commit): what the step's row
   * handlers published (EventBus.StepMessages), then the step's notices.
   */
  readonly notify: ReadonlyArray<Notice>
  /** Queued in `actor_notices` for `sendQueuedNotices`. */
  readonly queue: ReadonlyArray<Notice>
}

const json = (value: unknown) => JSON.stringify(value)

/** The CTEs of one step (named `s<index>_…`) and the columns it answers (its new seq, or null). */
const stepParts = (sql: SqlClient, step: StepWrite, index: number) => {
  const name = (part: string) => sql.literal(`s${index}_${part}`)
  const gate = name("gate")
  const { kind, actorId, seq, at } = step
  const fence = step.snapshot
  const ctes: Array<Fragment> = [
    fence === undefined
      ? sql`${gate} AS (SELECT ${seq}::bigint AS seq)`
      : sql`${gate} AS (
          UPDATE actor_snapshots
          SET seq = seq + 1, version = ${fence.version}, status = ${fence.status}, state_value = ${fence.stateValue},
              snapshot = ${json(fence.snapshot)}::jsonb, updated_at = ${at}
          WHERE kind = ${kind} AND actor_id = ${actorId} AND seq = ${fence.expectedSeq}
          RETURNING seq)`
  ]
  const { upserts, removed } = step.parts
  if (upserts.length > 0) {
    ctes.push(sql`${name("parts")} AS (
      INSERT INTO actor_parts (kind, actor_id, part, key, position, value)
      SELECT ${kind}, ${actorId}, p.part, p.key, p.position, p.value
      FROM ${gate}, jsonb_to_recordset(${json(upserts)}::jsonb) AS p(part text, key text, position integer, value jsonb)
      ON CONFLICT (kind, actor_id, part, key) DO UPDATE SET position = EXCLUDED.position, value = EXCLUDED.value)`)
  }
  if (removed.length > 0) {
    ctes.push(sql`${name("unparts")} AS (
      DELETE FROM actor_parts a
      USING ${gate}, jsonb_to_recordset(${json(removed)}::jsonb) AS r(part text, key text)
      WHERE a.kind = ${kind} AND a.actor_id = ${actorId} AND a.part = r.part AND a.key = r.key)`)
  }
  if (step.clearTimers || step.cancelTimers.length > 0) {
    ctes.push(sql`${name("cancelled")} AS (
      DELETE FROM actor_timers
      WHERE kind = ${kind} AND actor_id = ${actorId} AND EXISTS (SELECT 1 FROM ${gate})
        AND ${step.clearTimers ? sql`true` : sql`timer_id = ANY(${[...step.cancelTimers]}::text[])`})`)
  }
  if (!step.clearTimers && step.setTimers.length > 0) {
    const timers = step.setTimers.map((timer) => ({ timer_id: timer.timerId, event: timer.event, due_at: timer.dueAt }))
    ctes.push(sql`${name("timers")} AS (
      INSERT INTO actor_timers (kind, actor_id, timer_id, event, due_at, set_at_seq)
      SELECT ${kind}, ${actorId}, t.timer_id, t.event, t.due_at, ${seq}
      FROM ${gate}, jsonb_to_recordset(${json(timers)}::jsonb) AS t(timer_id text, event jsonb, due_at timestamptz)
      ON CONFLICT (kind, actor_id, timer_id)
      DO UPDATE SET event = EXCLUDED.event, due_at = EXCLUDED.due_at, set_at_seq = EXCLUDED.set_at_seq)`)
  }
  if (step.jobs.length > 0) {
    const jobs = step.jobs.map((job) => ({ action_index: job.actionIndex, name: job.name, params: job.params ?? null }))
    ctes.push(sql`${name("jobs")} AS (
      INSERT INTO actor_jobs (kind, actor_id, seq, action_index, name, params, state, next_attempt_at, created_at)
      SELECT ${kind}, ${actorId}, ${seq}, j.action_index, j.name, coalesce(j.params, 'null'::jsonb), 'pending', ${at}, ${at}
      FROM ${gate}, jsonb_to_recordset(${json(jobs)}::jsonb) AS j(action_index integer, name text, params jsonb)
      ON CONFLICT (kind, actor_id, seq, action_index) DO NOTHING)`)
  }
  const { stream, items } = step.outbox
  if (items.length > 0) {
    const head = name("head")
    const rows = items.map((item) => ({ public_id: item.publicId, type: item.type, payload: item.payload }))
    ctes.push(
      sql`${head} AS (
        INSERT INTO stream_heads (stream, last_sequence) SELECT ${stream}, ${items.length}::bigint FROM ${gate}
        ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + EXCLUDED.last_sequence
        RETURNING last_sequence)`,
      sql`${name("items")} AS (
        INSERT INTO outbox_items (stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at)
        SELECT ${stream}, h.last_sequence - ${items.length}::bigint + o.ord, o.public_id, o.type,
               ${step.outbox.resourceType}, ${actorId}, o.payload, ${at}
        FROM ${head} AS h, ROWS FROM (jsonb_to_recordset(${json(rows)}::jsonb) AS (public_id uuid, type text, payload jsonb))
          WITH ORDINALITY AS o(public_id, type, payload, ord))`
    )
  }
  const { journal } = step
  ctes.push(sql`${name("journal")} AS (
    INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
    SELECT ${kind}, ${actorId}, ${seq}, ${journal.event.type}, ${json(journal.event)}::jsonb, ${journal.fromState},
           ${journal.toState}, ${json(journal.actions)}::jsonb, ${at}
    FROM ${gate})`)
  if (step.queue.length > 0) {
    ctes.push(sql`${name("queued")} AS (
      INSERT INTO actor_notices (channel, payload)
      SELECT m.channel, m.payload
      FROM ${gate}, unnest(${step.queue.map((n) => n.channel)}::text[], ${step.queue.map((n) => n.payload)}::text[])
        AS m(channel, payload))`)
  }
  const written = sql`(SELECT seq FROM ${gate}) AS ${name("seq")}`
  const columns =
    step.notify.length === 0
      ? written
      : sql`${written}, (
          SELECT count(pg_notify(m.channel, m.payload))
          FROM ${gate}, unnest(${step.notify.map((n) => n.channel)}::text[], ${step.notify.map((n) => n.payload)}::text[])
            AS m(channel, payload)) AS ${name("notified")}`
  return { ctes, columns }
}

/**
 * Writes the steps of different actors in ONE statement, each behind its own fence; answers, for
 * each, whether it was written (false, having written nothing of it, when its fence found another
 * seq). Two steps appending to one stream fail the statement as a whole.
 */
export const writeSteps = Effect.fnUntraced(function* (steps: ReadonlyArray<StepWrite>) {
  const sql = yield* SqlClient
  const parts = steps.map((step, index) => stepParts(sql, step, index))
  const rows = yield* sql<Record<string, unknown>>`
    WITH ${sql.join(",\n", false)(parts.flatMap((part) => part.ctes))}
    SELECT ${sql.csv(parts.map((part) => part.columns))}`
  return steps.map((_, index) => rows[0]?.[`s${index}_seq`] != null)
})

/** Writes one step; answers false, having written nothing, when the fence finds another seq. */
export const writeStep = (step: StepWrite) => Effect.map(writeSteps([step]), ([written]) => written === true)

/**
 * NOTIFYs and deletes up to `limit` queued notices, oldest first, in a transaction that does not
 * wait for its WAL flush (lost in a database crash, the deletions return and the notices go
 * again: a notice is a wake-up, so a repeat is harmless); answers how many went.
 */
export const sendQueuedNotices = Effect.fnUntraced(function* (limit: number) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ sent: bigint }>`
    WITH sent AS (
      DELETE FROM actor_notices
      WHERE id IN (SELECT id FROM actor_notices ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED)
      RETURNING id, channel, payload)
    SELECT set_config('synchronous_commit', 'off', true) AS setting,
           (SELECT count(pg_notify(s.channel, s.payload)) FROM (SELECT * FROM sent ORDER BY id) s) AS sent`
  return Number(rows[0]?.sent ?? 0)
})
