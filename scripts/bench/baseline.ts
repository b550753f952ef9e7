// The baselines: the writes of one actor step as bare SQL with no runtime (no machine, mailbox,
// plan or notification), each actor seeded like a created one (snapshot and journal row at seq 1):
// - `transaction`: BEGIN, the seq-fenced snapshot UPDATE, the stream head upsert, the outbox
//   INSERT, the journal INSERT, COMMIT (six round trips), the way a program writes them by hand;
// - `statement`: the same four writes as ONE statement (data-modifying CTEs gated on the fence),
//   the shape the runtime's own step statement has (ActorSteps.ts), so comparing with it shows
//   the runtime's own cost alone.
// `checkWrites` verifies afterwards that every side wrote the same rows per step.
import { newPublicId } from "@troupe/storage/Ids"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type BaselineShape = "transaction" | "statement"

const kindOf = (shape: BaselineShape) => `bench_baseline_${shape}`
const actions = JSON.stringify(["xstate.assign", "xstate.emit"])
const event = JSON.stringify({ type: "bench.count" })

/** A persisted snapshot shaped like the one xstate writes for the counter. */
const snapshotJson = (count: number) =>
  JSON.stringify({ status: "active", value: "counting", historyValue: {}, context: { count }, children: {} })

/** Inserts the baseline actors' snapshot rows and journal rows at seq 1; answers their ids. */
export const seedBaseline = (shape: BaselineShape, count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const kind = kindOf(shape)
    const now = new Date(yield* Clock.currentTimeMillis)
    const ids = Array.from({ length: count }, () => newPublicId())
    for (const id of ids) {
      yield* sql`
        INSERT INTO actor_snapshots (kind, actor_id, machine, version, seq, status, state_value, snapshot, created_at, updated_at)
        VALUES (${kind}, ${id}, 'benchCounter', 1, 1, 'active', 'counting', ${snapshotJson(0)}::jsonb, ${now}, ${now})`
      yield* sql`
        INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
        VALUES (${kind}, ${id}, 1, 'xstate.init', '{"type":"xstate.init"}'::jsonb, NULL, 'counting', '[]'::jsonb, ${now})`
    }
    return ids
  })

interface Write {
  readonly kind: string
  readonly actorId: string
  readonly expected: bigint
  readonly seq: bigint
  readonly count: number
  readonly at: Date
  readonly stream: string
}

const transaction = (sql: SqlClient, write: Write) =>
  Effect.gen(function* () {
    const { kind, actorId, expected, seq, count, at, stream } = write
    const advanced = yield* sql`
      UPDATE actor_snapshots
      SET seq = seq + 1, version = 1, status = 'active', state_value = 'counting',
          snapshot = ${snapshotJson(count)}::jsonb, updated_at = ${at}
      WHERE kind = ${kind} AND actor_id = ${actorId} AND seq = ${expected}
      RETURNING seq`
    if (advanced.length === 0) return false
    const head = yield* sql<{ last_sequence: bigint }>`
      INSERT INTO stream_heads (stream, last_sequence) VALUES (${stream}, 1)
      ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + 1
      RETURNING last_sequence`
    yield* sql`
      INSERT INTO outbox_items (stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at)
      VALUES (${stream}, ${head[0]!.last_sequence}, ${newPublicId()}, 'bench.counted', ${kind}, ${actorId},
              ${JSON.stringify({ count })}::jsonb, ${at})`
    yield* sql`
      INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
      VALUES (${kind}, ${actorId}, ${seq}, 'bench.count', ${event}::jsonb, 'counting', 'counting', ${actions}::jsonb, ${at})`
    return true
  }).pipe(sql.withTransaction)

const statement = (sql: SqlClient, write: Write) =>
  Effect.gen(function* () {
    const { kind, actorId, expected, seq, count, at, stream } = write
    const rows = yield* sql`
      WITH gate AS (
        UPDATE actor_snapshots
        SET seq = seq + 1, version = 1, status = 'active', state_value = 'counting',
            snapshot = ${snapshotJson(count)}::jsonb, updated_at = ${at}
        WHERE kind = ${kind} AND actor_id = ${actorId} AND seq = ${expected}
        RETURNING seq),
      head AS (
        INSERT INTO stream_heads (stream, last_sequence) SELECT ${stream}, 1 FROM gate
        ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + 1
        RETURNING last_sequence),
      items AS (
        INSERT INTO outbox_items (stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at)
        SELECT ${stream}, head.last_sequence, ${newPublicId()}, 'bench.counted', ${kind}, ${actorId},
               ${JSON.stringify({ count })}::jsonb, ${at}
        FROM head),
      journal AS (
        INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
        SELECT ${kind}, ${actorId}, ${seq}, 'bench.count', ${event}::jsonb, 'counting', 'counting', ${actions}::jsonb, ${at}
        FROM gate)
      SELECT seq FROM gate`
    return rows.length > 0
  })

/** One baseline step per call for each actor; the caller runs an actor's steps one at a time. */
export const baselineStepper = (shape: BaselineShape) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const kind = kindOf(shape)
    const write = shape === "transaction" ? transaction : statement
    const seqs = new Map<string, bigint>()
    return (actorId: string) =>
      Effect.gen(function* () {
        const expected = seqs.get(actorId) ?? 1n
        const seq = expected + 1n
        const at = new Date(yield* Clock.currentTimeMillis)
        const stream = `${kind}:${actorId}`
        const count = Number(seq) - 1
        if (!(yield* write(sql, { kind, actorId, expected, seq, count, at, stream }))) {
          return yield* Effect.die(new Error(`baseline ${actorId}: seq conflict`))
        }
        seqs.set(actorId, seq)
      })
  })

/**
 * Checks that each actor's rows are those of its creation and `seq - 1` steps: a journal row per
 * seq, and one outbox item per step under a stream head at `seq - 1`. Answers what differs.
 */
export const checkWrites = (actors: ReadonlyArray<string>, streamOf: (actorId: string) => string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const rows = yield* sql<{ actor_id: string; seq: bigint; journal: bigint; items: bigint; head: bigint | null }>`
      SELECT a.actor_id, s.seq,
             (SELECT count(*) FROM actor_journal j WHERE j.kind = s.kind AND j.actor_id = s.actor_id) AS journal,
             (SELECT count(*) FROM outbox_items o WHERE o.stream = a.stream) AS items,
             (SELECT h.last_sequence FROM stream_heads h WHERE h.stream = a.stream) AS head
      FROM unnest(${[...actors]}::uuid[], ${actors.map(streamOf)}::text[]) AS a(actor_id, stream)
      JOIN actor_snapshots s ON s.actor_id = a.actor_id`
    const problems = rows.flatMap((row) => {
      const steps = row.seq - 1n
      return row.journal === row.seq && row.items === steps && (row.head ?? 0n) === steps
        ? []
        : [`${row.actor_id}: seq ${row.seq}, ${row.journal} journal rows, ${row.items} items, head ${row.head}`]
    })
    return rows.length === actors.length ? problems : [...problems, `${actors.length - rows.length} actors missing`]
  })
