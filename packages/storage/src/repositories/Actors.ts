// Rows of the actor runtime: snapshots (seq-fenced), journal, timers, jobs and dead letters
// (messages between actors are in ActorMessages.ts).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export interface SnapshotRow {
  readonly kind: string
  readonly actor_id: string
  readonly machine: string
  readonly version: number
  readonly seq: bigint
  readonly status: "active" | "done" | "error"
  readonly state_value: string
  readonly snapshot: unknown
  readonly quarantined_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
}

export interface SnapshotWrite {
  readonly kind: string
  readonly actorId: string
  readonly machine: string
  readonly version: number
  readonly status: SnapshotRow["status"]
  readonly stateValue: string
  readonly snapshot: unknown
  readonly now: Date
}

const json = (value: unknown) => JSON.stringify(value)

export const insertSnapshot = Effect.fnUntraced(function* (write: SnapshotWrite) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ seq: bigint }>`
    INSERT INTO actor_snapshots (kind, actor_id, machine, version, seq, status, state_value, snapshot, created_at, updated_at)
    VALUES (${write.kind}, ${write.actorId}, ${write.machine}, ${write.version}, 1, ${write.status}, ${write.stateValue},
            ${json(write.snapshot)}::jsonb, ${write.now}, ${write.now})
    ON CONFLICT (kind, actor_id) DO NOTHING
    RETURNING seq`
  return rows.length > 0
})

/** Writes the next snapshot only where `seq` is still `expectedSeq`; answers false on a conflict. */
export const advanceSnapshot = Effect.fnUntraced(function* (write: SnapshotWrite, expectedSeq: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_snapshots
    SET seq = seq + 1, version = ${write.version}, status = ${write.status}, state_value = ${write.stateValue},
        snapshot = ${json(write.snapshot)}::jsonb, updated_at = ${write.now}
    WHERE kind = ${write.kind} AND actor_id = ${write.actorId} AND seq = ${expectedSeq}
    RETURNING seq`
  return rows.length > 0
})

export const findSnapshot = Effect.fnUntraced(function* (kind: string, actorId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<SnapshotRow>`SELECT * FROM actor_snapshots WHERE kind = ${kind} AND actor_id = ${actorId}`
  return rows[0]
})

export const setQuarantined = Effect.fnUntraced(function* (kind: string, actorId: string, at: Date | null) {
  const sql = yield* SqlClient
  yield* sql`UPDATE actor_snapshots SET quarantined_at = ${at} WHERE kind = ${kind} AND actor_id = ${actorId}`
})

export interface ListFilter {
  readonly kind?: string | undefined
  readonly state?: string | undefined
  readonly quarantined?: boolean | undefined
  readonly afterActorId?: string | undefined
  readonly order?: "asc" | "desc" | undefined
  readonly limit: number
}

export const listSnapshots = Effect.fnUntraced(function* (filter: ListFilter) {
  const sql = yield* SqlClient
  const conditions = [
    filter.kind === undefined ? undefined : sql`kind = ${filter.kind}`,
    filter.state === undefined ? undefined : sql`state_value = ${filter.state}`,
    filter.quarantined === undefined
      ? undefined
      : filter.quarantined
        ? sql`quarantined_at IS NOT NULL`
        : sql`quarantined_at IS NULL`,
    filter.afterActorId === undefined
      ? undefined
      : filter.order === "desc"
        ? sql`actor_id < ${filter.afterActorId}`
        : sql`actor_id > ${filter.afterActorId}`
  ].filter((condition) => condition !== undefined)
  return yield* sql<SnapshotRow>`
    SELECT * FROM actor_snapshots
    WHERE ${conditions.length === 0 ? sql`true` : sql.and(conditions)}
    ORDER BY actor_id ${filter.order === "desc" ? sql`DESC` : sql`ASC`} LIMIT ${filter.limit}`
})

/** Non-terminal, unquarantined actors with no timer, pending job or pending message: candidates for "stuck". */
export const idleActiveActors = Effect.fnUntraced(function* (kind: string | undefined, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<SnapshotRow>`
    SELECT s.* FROM actor_snapshots s
    WHERE s.status = 'active' AND s.quarantined_at IS NULL
      AND ${kind === undefined ? sql`true` : sql`s.kind = ${kind}`}
      AND NOT EXISTS (SELECT 1 FROM actor_timers t WHERE t.kind = s.kind AND t.actor_id = s.actor_id)
      AND NOT EXISTS (SELECT 1 FROM actor_jobs j WHERE j.kind = s.kind AND j.actor_id = s.actor_id AND j.state = 'pending')
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages m WHERE m.to_kind = s.kind AND m.to_actor_id = s.actor_id AND m.state = 'pending')
    ORDER BY s.actor_id LIMIT ${limit}`
})

export const countByKind = Effect.gen(function* () {
  const sql = yield* SqlClient
  return yield* sql<{ kind: string; actors: bigint; active: bigint; quarantined: bigint }>`
    SELECT kind, count(*) AS actors, count(*) FILTER (WHERE status = 'active') AS active,
           count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined
    FROM actor_snapshots GROUP BY kind`
})

export interface JournalWrite {
  readonly kind: string
  readonly actorId: string
  readonly seq: bigint
  readonly event: { readonly type: string; readonly [key: string]: unknown }
  readonly fromState: string | null
  readonly toState: string
  readonly actions: ReadonlyArray<string>
  readonly at: Date
}

/** A bus notice NOTIFYed by the journal's statement (PostgreSQL holds it until commit). */
export interface Notice {
  readonly channel: string
  readonly payload: string
}

/**
 * Appends the journal row; on PostgreSQL the step's notices ride in the same statement
 * (`pg_notify`, held until commit), so they cost no round trip of their own.
 */
export const appendJournal = Effect.fnUntraced(function* (entry: JournalWrite, notices: ReadonlyArray<Notice> = []) {
  const sql = yield* SqlClient
  const insert = sql`
    INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
    VALUES (${entry.kind}, ${entry.actorId}, ${entry.seq}, ${entry.event.type}, ${json(entry.event)}::jsonb,
            ${entry.fromState}, ${entry.toState}, ${json(entry.actions)}::jsonb, ${entry.at})`
  yield* notices.length === 0
    ? insert
    : sql`
    WITH journal AS (${insert})
    SELECT pg_notify(m.channel, m.payload)
    FROM unnest(${notices.map((n) => n.channel)}::text[], ${notices.map((n) => n.payload)}::text[]) AS m(channel, payload)`
})

export interface JournalRow {
  readonly seq: bigint
  readonly event_type: string
  readonly event: unknown
  readonly from_state: string | null
  readonly to_state: string
  readonly actions: ReadonlyArray<string>
  readonly at: Date
}

export const readJournal = Effect.fnUntraced(function* (
  kind: string,
  actorId: string,
  afterSeq: bigint,
  limit: number
) {
  const sql = yield* SqlClient
  return yield* sql<JournalRow>`
    SELECT seq, event_type, event, from_state, to_state, actions, at FROM actor_journal
    WHERE kind = ${kind} AND actor_id = ${actorId} AND seq > ${afterSeq}
    ORDER BY seq LIMIT ${limit}`
})

export interface TimerRow {
  readonly id: bigint
  readonly kind: string
  readonly actor_id: string
  readonly timer_id: string
  readonly event: { readonly type: string }
  readonly due_at: Date
  readonly set_at_seq: bigint
}

export const upsertTimer = Effect.fnUntraced(function* (timer: {
  readonly kind: string
  readonly actorId: string
  readonly timerId: string
  readonly event: unknown
  readonly dueAt: Date
  readonly seq: bigint
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_timers (kind, actor_id, timer_id, event, due_at, set_at_seq)
    VALUES (${timer.kind}, ${timer.actorId}, ${timer.timerId}, ${json(timer.event)}::jsonb, ${timer.dueAt}, ${timer.seq})
    ON CONFLICT (kind, actor_id, timer_id)
    DO UPDATE SET event = EXCLUDED.event, due_at = EXCLUDED.due_at, set_at_seq = EXCLUDED.set_at_seq`
})

export const deleteTimer = Effect.fnUntraced(function* (kind: string, actorId: string, timerId: string) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM actor_timers WHERE kind = ${kind} AND actor_id = ${actorId} AND timer_id = ${timerId}`
})

/** Deletes the timer row if it is still the one delivered (same row, same setting step). */
export const consumeTimer = Effect.fnUntraced(function* (id: bigint, setAtSeq: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM actor_timers WHERE id = ${id} AND set_at_seq = ${setAtSeq} RETURNING id`
  return rows.length > 0
})

export const deleteActorTimers = Effect.fnUntraced(function* (kind: string, actorId: string) {
  const sql = yield* SqlClient
  yield* sql`DELETE FROM actor_timers WHERE kind = ${kind} AND actor_id = ${actorId}`
})

export const actorTimers = Effect.fnUntraced(function* (kind: string, actorId: string) {
  const sql = yield* SqlClient
  return yield* sql<TimerRow>`
    SELECT * FROM actor_timers WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY due_at`
})

export const dueTimers = Effect.fnUntraced(function* (now: Date, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<TimerRow>`
    SELECT * FROM actor_timers WHERE due_at <= ${now} ORDER BY due_at, id LIMIT ${limit}`
})

export const nextTimerDue = Effect.gen(function* () {
  const sql = yield* SqlClient
  const rows = yield* sql<{ due_at: Date | null }>`SELECT min(due_at) AS due_at FROM actor_timers`
  return rows[0]?.due_at ?? undefined
})

export interface JobRow {
  readonly id: bigint
  readonly kind: string
  readonly actor_id: string
  readonly seq: bigint
  readonly action_index: number
  readonly name: string
  readonly params: unknown
  readonly state: "pending" | "done"
  readonly attempts: number
  readonly next_attempt_at: Date
  readonly lease_until: Date | null
  readonly last_error: string | null
  readonly created_at: Date
  readonly finished_at: Date | null
}

export const insertJob = Effect.fnUntraced(function* (job: {
  readonly kind: string
  readonly actorId: string
  readonly seq: bigint
  readonly actionIndex: number
  readonly name: string
  readonly params: unknown
  readonly now: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_jobs (kind, actor_id, seq, action_index, name, params, state, next_attempt_at, created_at)
    VALUES (${job.kind}, ${job.actorId}, ${job.seq}, ${job.actionIndex}, ${job.name}, ${json(job.params ?? null)}::jsonb,
            'pending', ${job.now}, ${job.now})
    ON CONFLICT (kind, actor_id, seq, action_index) DO NOTHING`
})

/** Leases up to `limit` ready jobs (pending, due, not leased by a live runner). */
export const leaseJobs = Effect.fnUntraced(function* (now: Date, leaseUntil: Date, limit: number) {
  const sql = yield* SqlClient
  return yield* sql<JobRow>`
    UPDATE actor_jobs SET lease_until = ${leaseUntil}, attempts = attempts + 1
    WHERE id IN (
      SELECT id FROM actor_jobs
      WHERE state = 'pending' AND next_attempt_at <= ${now} AND (lease_until IS NULL OR lease_until < ${now})
      ORDER BY next_attempt_at, id LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING *`
})

/** Marks the job done; answers false when it already was (a repeated report). */
export const finishJob = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_jobs SET state = 'done', finished_at = ${now}, lease_until = NULL
    WHERE id = ${id} AND state = 'pending' RETURNING id`
  return rows.length > 0
})

export const retryJobLater = Effect.fnUntraced(function* (id: bigint, nextAttemptAt: Date, error: string) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE actor_jobs SET lease_until = NULL, next_attempt_at = ${nextAttemptAt}, last_error = ${error}
    WHERE id = ${id} AND state = 'pending'`
})

export const actorJobs = Effect.fnUntraced(function* (kind: string, actorId: string) {
  const sql = yield* SqlClient
  return yield* sql<JobRow>`SELECT * FROM actor_jobs WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY id`
})

export const nextJobDue = Effect.gen(function* () {
  const sql = yield* SqlClient
  const rows = yield* sql<{ at: Date | null }>`
    SELECT min(greatest(next_attempt_at, coalesce(lease_until, next_attempt_at))) AS at
    FROM actor_jobs WHERE state = 'pending'`
  return rows[0]?.at ?? undefined
})

export const insertDeadLetter = Effect.fnUntraced(function* (letter: {
  readonly kind: string
  readonly actorId: string
  readonly event: unknown
  readonly error: string
  readonly attempts: number
  readonly at: Date
}) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_dead_letters (kind, actor_id, event, error, attempts, at)
    VALUES (${letter.kind}, ${letter.actorId}, ${json(letter.event)}::jsonb, ${letter.error}, ${letter.attempts}, ${letter.at})`
})

export const deadLetters = Effect.fnUntraced(function* (kind: string, actorId: string) {
  const sql = yield* SqlClient
  return yield* sql<{ id: bigint; event: unknown; error: string; attempts: number; at: Date }>`
    SELECT id, event, error, attempts, at FROM actor_dead_letters
    WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY id`
})

/** Which of the given actors have no timer, pending job or pending message. */
export const idleAmong = Effect.fnUntraced(function* (actorIds: ReadonlyArray<string>) {
  if (actorIds.length === 0) return new Set<string>()
  const sql = yield* SqlClient
  const rows = yield* sql<{ kind: string; actor_id: string }>`
    SELECT s.kind, s.actor_id FROM actor_snapshots s
    WHERE s.actor_id = ANY(${[...actorIds]}::uuid[])
      AND NOT EXISTS (SELECT 1 FROM actor_timers t WHERE t.kind = s.kind AND t.actor_id = s.actor_id)
      AND NOT EXISTS (SELECT 1 FROM actor_jobs j WHERE j.kind = s.kind AND j.actor_id = s.actor_id AND j.state = 'pending')
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages m WHERE m.to_kind = s.kind AND m.to_actor_id = s.actor_id AND m.state = 'pending')`
  return new Set(rows.map((row) => `${row.kind}/${row.actor_id}`))
})
