// Rows of the actor runtime: snapshots (seq-fenced), journal, timers, jobs and dead letters
// (messages between actors are in ActorMessages.ts).
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

/** An event as rows hold it (journal, timers, messages): a type and any other members, kept whole. */
export const EventColumn = Schema.StructWithRest(Schema.Struct({ type: Schema.String }), [
  Schema.Record(Schema.String, Schema.Unknown)
])

/** One actor and where it is (column names as in `actor_snapshots`; the snapshot JSON is the machine's to read). */
export const SnapshotRow = Schema.Struct({
  kind: Schema.String,
  actor_id: Schema.String,
  machine: Schema.String,
  version: Schema.Number,
  seq: Schema.BigInt,
  status: Schema.Literals(["active", "done", "error"]),
  state_value: Schema.String,
  snapshot: Schema.Unknown,
  quarantined_at: Schema.NullOr(Schema.Date),
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type SnapshotRow = typeof SnapshotRow.Type

const ActorKey = Schema.Struct({ kind: Schema.String, actorId: Schema.String })

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

const snapshotOf = Rows.maybe("Actors.findSnapshot", {
  Request: ActorKey,
  Result: SnapshotRow,
  execute: ({ kind, actorId }, sql) => sql`SELECT * FROM actor_snapshots WHERE kind = ${kind} AND actor_id = ${actorId}`
})

/** The row as stored: a context's parts (`actor_parts`) are not in its snapshot. */
export const findSnapshot = (kind: string, actorId: string) => snapshotOf({ kind, actorId })

/** An actor's context parts by name: each the elements its `actor_parts` rows hold, in position order. */
export type Parts = Readonly<Record<string, ReadonlyArray<unknown>>>

const isRecord = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const withPartsOf = Rows.maybe("Actors.findSnapshotWithParts", {
  Request: ActorKey,
  Result: Schema.Struct({
    ...SnapshotRow.fields,
    parts: Schema.NullOr(Schema.Record(Schema.String, Schema.Array(Schema.Unknown)))
  }),
  execute: ({ kind, actorId }, sql) => sql`
    SELECT s.*, (
      SELECT jsonb_object_agg(g.part, g.elements) FROM (
        SELECT p.part, jsonb_agg(p.value ORDER BY p.position) AS elements FROM actor_parts p
        WHERE p.kind = s.kind AND p.actor_id = s.actor_id GROUP BY p.part) g) AS parts
    FROM actor_snapshots s WHERE s.kind = ${kind} AND s.actor_id = ${actorId}`
})

/**
 * The row with its snapshot whole: the context's parts read back from their rows (one statement),
 * and `parts`, what those rows hold (a part with no rows is absent from both: it is empty, or an
 * older row still keeps it inline in its snapshot).
 */
export const findSnapshotWithParts = (kind: string, actorId: string) =>
  Effect.map(withPartsOf({ kind, actorId }), (found) => {
    if (found === undefined) return undefined
    const { parts: stored, ...row } = found
    const parts: Parts = stored ?? {}
    const snapshot = row.snapshot
    return stored === null || !isRecord(snapshot) || !isRecord(snapshot.context)
      ? { ...row, parts }
      : { ...row, snapshot: { ...snapshot, context: { ...snapshot.context, ...parts } }, parts }
  })

export const setQuarantined = Effect.fnUntraced(function* (kind: string, actorId: string, at: Date | null) {
  const sql = yield* SqlClient
  yield* sql`UPDATE actor_snapshots SET quarantined_at = ${at} WHERE kind = ${kind} AND actor_id = ${actorId}`
})

export const ListFilter = Schema.Struct({
  kind: Schema.optional(Schema.String),
  state: Schema.optional(Schema.String),
  quarantined: Schema.optional(Schema.Boolean),
  afterActorId: Schema.optional(Schema.String),
  order: Schema.optional(Schema.Literals(["asc", "desc"])),
  limit: Schema.Number
})
export type ListFilter = typeof ListFilter.Type

export const listSnapshots = Rows.all("Actors.listSnapshots", {
  Request: ListFilter,
  Result: SnapshotRow,
  execute: (filter, sql) => {
    const conditions = [
      filter.kind === undefined ? undefined : sql`kind = ${filter.kind}`,
      // A compound state matches the actors in any state nested in it ("live" holds "live.running").
      filter.state === undefined
        ? undefined
        : sql`(state_value = ${filter.state} OR starts_with(state_value, ${`${filter.state}.`}))`,
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
    return sql`
      SELECT * FROM actor_snapshots
      WHERE ${conditions.length === 0 ? sql`true` : sql.and(conditions)}
      ORDER BY actor_id ${filter.order === "desc" ? sql`DESC` : sql`ASC`} LIMIT ${filter.limit}`
  }
})

const idleActive = Rows.all("Actors.idleActiveActors", {
  Request: Schema.Struct({ kind: Schema.UndefinedOr(Schema.String), limit: Schema.Number }),
  Result: SnapshotRow,
  execute: ({ kind, limit }, sql) => sql`
    SELECT s.* FROM actor_snapshots s
    WHERE s.status = 'active' AND s.quarantined_at IS NULL
      AND ${kind === undefined ? sql`true` : sql`s.kind = ${kind}`}
      AND NOT EXISTS (SELECT 1 FROM actor_timers t WHERE t.kind = s.kind AND t.actor_id = s.actor_id)
      AND NOT EXISTS (SELECT 1 FROM actor_jobs j WHERE j.kind = s.kind AND j.actor_id = s.actor_id AND j.state = 'pending')
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages m WHERE m.to_kind = s.kind AND m.to_actor_id = s.actor_id AND m.state = 'pending')
    ORDER BY s.actor_id LIMIT ${limit}`
})

/** Non-terminal, unquarantined actors with no timer, pending job or pending message: candidates for "stuck". */
export const idleActiveActors = (kind: string | undefined, limit: number) => idleActive({ kind, limit })

export const countByKind = Rows.all("Actors.countByKind", {
  Request: Schema.Void,
  Result: Schema.Struct({
    kind: Schema.String,
    actors: Schema.BigInt,
    active: Schema.BigInt,
    quarantined: Schema.BigInt
  }),
  execute: (_, sql) => sql`
    SELECT kind, count(*) AS actors, count(*) FILTER (WHERE status = 'active') AS active,
           count(*) FILTER (WHERE quarantined_at IS NOT NULL) AS quarantined
    FROM actor_snapshots GROUP BY kind`
})(undefined)

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

/** Appends a journal row (a step's own is written by its statement, ActorSteps.ts). */
export const appendJournal = Effect.fnUntraced(function* (entry: JournalWrite) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
    VALUES (${entry.kind}, ${entry.actorId}, ${entry.seq}, ${entry.event.type}, ${json(entry.event)}::jsonb,
            ${entry.fromState}, ${entry.toState}, ${json(entry.actions)}::jsonb, ${entry.at})`
})

export const JournalRow = Schema.Struct({
  seq: Schema.BigInt,
  event_type: Schema.String,
  event: Schema.Unknown,
  from_state: Schema.NullOr(Schema.String),
  to_state: Schema.String,
  actions: Schema.Array(Schema.String),
  at: Schema.Date
})
export type JournalRow = typeof JournalRow.Type

const journalPage = Rows.all("Actors.readJournal", {
  Request: Schema.Struct({ ...ActorKey.fields, afterSeq: Schema.BigInt, limit: Schema.Number }),
  Result: JournalRow,
  execute: ({ kind, actorId, afterSeq, limit }, sql) => sql`
    SELECT seq, event_type, event, from_state, to_state, actions, at FROM actor_journal
    WHERE kind = ${kind} AND actor_id = ${actorId} AND seq > ${afterSeq}
    ORDER BY seq LIMIT ${limit}`
})

export const readJournal = (kind: string, actorId: string, afterSeq: bigint, limit: number) =>
  journalPage({ kind, actorId, afterSeq, limit })

export const TimerRow = Schema.Struct({
  id: Schema.BigInt,
  kind: Schema.String,
  actor_id: Schema.String,
  timer_id: Schema.String,
  event: EventColumn,
  due_at: Schema.Date,
  set_at_seq: Schema.BigInt
})
export type TimerRow = typeof TimerRow.Type

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

/** Deletes the timer row if it is still the one delivered (same row, same setting step). */
export const consumeTimer = Effect.fnUntraced(function* (id: bigint, setAtSeq: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql`DELETE FROM actor_timers WHERE id = ${id} AND set_at_seq = ${setAtSeq} RETURNING id`
  return rows.length > 0
})

const timersOf = Rows.all("Actors.actorTimers", {
  Request: ActorKey,
  Result: TimerRow,
  execute: ({ kind, actorId }, sql) => sql`
    SELECT * FROM actor_timers WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY due_at`
})

export const actorTimers = (kind: string, actorId: string) => timersOf({ kind, actorId })

/**
 * A timer or job of a quarantined actor waits for its restart: delivered now it could only be
 * refused (and a job would run its work again for nothing). `t` names the timer or job row.
 */
const notQuarantined = (sql: SqlClient) => sql`NOT EXISTS (
  SELECT 1 FROM actor_snapshots s
  WHERE s.kind = t.kind AND s.actor_id = t.actor_id AND s.quarantined_at IS NOT NULL)`

const due = Rows.all("Actors.dueTimers", {
  Request: Schema.Struct({ now: Schema.Date, limit: Schema.Number }),
  Result: TimerRow,
  execute: ({ now, limit }, sql) => sql`
    SELECT t.* FROM actor_timers t WHERE t.due_at <= ${now} AND ${notQuarantined(sql)}
    ORDER BY t.due_at, t.id LIMIT ${limit}`
})

export const dueTimers = (now: Date, limit: number) => due({ now, limit })

/** When the earliest of a set of rows falls due (null when there is none). */
const NextDue = Schema.Struct({ at: Schema.NullOr(Schema.Date) })

export const nextTimerDue = Rows.one("Actors.nextTimerDue", {
  Request: Schema.Void,
  Result: NextDue,
  execute: (_, sql) => sql`SELECT min(t.due_at) AS at FROM actor_timers t WHERE ${notQuarantined(sql)}`
})(undefined).pipe(Effect.map((row) => row.at ?? undefined))

export const JobRow = Schema.Struct({
  id: Schema.BigInt,
  kind: Schema.String,
  actor_id: Schema.String,
  seq: Schema.BigInt,
  action_index: Schema.Number,
  name: Schema.String,
  params: Schema.Unknown,
  state: Schema.Literals(["pending", "done"]),
  attempts: Schema.Number,
  next_attempt_at: Schema.Date,
  lease_until: Schema.NullOr(Schema.Date),
  last_error: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  finished_at: Schema.NullOr(Schema.Date)
})
export type JobRow = typeof JobRow.Type

/** A lease: what is due at `now`, held until `leaseUntil`, at most `limit` rows. */
const Lease = Schema.Struct({ now: Schema.Date, leaseUntil: Schema.Date, limit: Schema.Number })

const jobLease = Rows.all("Actors.leaseJobs", {
  Request: Lease,
  Result: JobRow,
  execute: ({ now, leaseUntil, limit }, sql) => sql`
    UPDATE actor_jobs SET lease_until = ${leaseUntil}, attempts = attempts + 1
    WHERE id IN (
      SELECT t.id FROM actor_jobs t
      WHERE t.state = 'pending' AND t.next_attempt_at <= ${now} AND (t.lease_until IS NULL OR t.lease_until < ${now})
        AND ${notQuarantined(sql)}
      ORDER BY t.next_attempt_at, t.id LIMIT ${limit}
      FOR UPDATE OF t SKIP LOCKED)
    RETURNING *`
})

/** Leases up to `limit` ready jobs (pending, due, not leased by a live runner, actor not quarantined). */
export const leaseJobs = (now: Date, leaseUntil: Date, limit: number) => jobLease({ now, leaseUntil, limit })

/** Marks the job done; answers false when it already was (a repeated report). */
export const finishJob = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_jobs SET state = 'done', finished_at = ${now}, lease_until = NULL
    WHERE id = ${id} AND state = 'pending' RETURNING id`
  return rows.length > 0
})

/** Extends the lease of a job its runner still runs; answers false when the job is no longer pending. */
export const renewJobLease = Effect.fnUntraced(function* (id: bigint, leaseUntil: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE actor_jobs SET lease_until = ${leaseUntil} WHERE id = ${id} AND state = 'pending' RETURNING id`
  return rows.length > 0
})

/** Gives a job's lease back untouched: its report met a quarantined actor, so it runs again after the restart. */
export const releaseJobLease = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  yield* sql`UPDATE actor_jobs SET lease_until = NULL WHERE id = ${id} AND state = 'pending'`
})

export const retryJobLater = Effect.fnUntraced(function* (id: bigint, nextAttemptAt: Date, error: string) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE actor_jobs SET lease_until = NULL, next_attempt_at = ${nextAttemptAt}, last_error = ${error}
    WHERE id = ${id} AND state = 'pending'`
})

const jobsOf = Rows.all("Actors.actorJobs", {
  Request: ActorKey,
  Result: JobRow,
  execute: ({ kind, actorId }, sql) =>
    sql`SELECT * FROM actor_jobs WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY id`
})

export const actorJobs = (kind: string, actorId: string) => jobsOf({ kind, actorId })

export const nextJobDue = Rows.one("Actors.nextJobDue", {
  Request: Schema.Void,
  Result: NextDue,
  execute: (_, sql) => sql`
    SELECT min(greatest(t.next_attempt_at, coalesce(t.lease_until, t.next_attempt_at))) AS at
    FROM actor_jobs t WHERE t.state = 'pending' AND ${notQuarantined(sql)}`
})(undefined).pipe(Effect.map((row) => row.at ?? undefined))

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

export const DeadLetterRow = Schema.Struct({
  id: Schema.BigInt,
  event: Schema.Unknown,
  error: Schema.String,
  attempts: Schema.Number,
  at: Schema.Date
})
export type DeadLetterRow = typeof DeadLetterRow.Type

const deadLettersOf = Rows.all("Actors.deadLetters", {
  Request: ActorKey,
  Result: DeadLetterRow,
  execute: ({ kind, actorId }, sql) => sql`
    SELECT id, event, error, attempts, at FROM actor_dead_letters
    WHERE kind = ${kind} AND actor_id = ${actorId} ORDER BY id`
})

export const deadLetters = (kind: string, actorId: string) => deadLettersOf({ kind, actorId })

const idleOf = Rows.all("Actors.idleAmong", {
  Request: Schema.Struct({ actorIds: Schema.Array(Schema.String) }),
  Result: Schema.Struct({ kind: Schema.String, actor_id: Schema.String }),
  execute: ({ actorIds }, sql) => sql`
    SELECT s.kind, s.actor_id FROM actor_snapshots s
    WHERE s.actor_id = ANY(${[...actorIds]}::uuid[])
      AND NOT EXISTS (SELECT 1 FROM actor_timers t WHERE t.kind = s.kind AND t.actor_id = s.actor_id)
      AND NOT EXISTS (SELECT 1 FROM actor_jobs j WHERE j.kind = s.kind AND j.actor_id = s.actor_id AND j.state = 'pending')
      AND NOT EXISTS (
        SELECT 1 FROM actor_messages m WHERE m.to_kind = s.kind AND m.to_actor_id = s.actor_id AND m.state = 'pending')`
})

/** Which of the given actors have no timer, pending job or pending message. */
export const idleAmong = Effect.fnUntraced(function* (actorIds: ReadonlyArray<string>) {
  if (actorIds.length === 0) return new Set<string>()
  const rows = yield* idleOf({ actorIds })
  return new Set(rows.map((row) => `${row.kind}/${row.actor_id}`))
})
