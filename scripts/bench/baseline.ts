// The baseline: the writes of one actor step issued as a plain SQL transaction with no runtime
// (no machine, mailbox, plan or notifications): the seq-fenced snapshot UPDATE, the stream
// head upsert and outbox INSERT, and the journal INSERT, the same statements the repositories use.
import { newPublicId } from "@troupe/storage/Ids"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export const baselineKind = "bench_baseline"

const actions = JSON.stringify(["xstate.assign", "xstate.emit"])
const event = JSON.stringify({ type: "bench.count" })

/** A persisted snapshot shaped like the one xstate writes for the counter. */
const snapshotJson = (count: number) =>
  JSON.stringify({ status: "active", value: "counting", historyValue: {}, context: { count }, children: {} })

/** Inserts the baseline actors' snapshot rows at seq 1; answers their ids. */
export const seedBaseline = (count: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const now = new Date(yield* Clock.currentTimeMillis)
    const ids = Array.from({ length: count }, () => newPublicId())
    for (const id of ids) {
      yield* sql`
        INSERT INTO actor_snapshots (kind, actor_id, machine, version, seq, status, state_value, snapshot, created_at, updated_at)
        VALUES (${baselineKind}, ${id}, 'benchCounter', 1, 1, 'active', 'counting', ${snapshotJson(0)}::jsonb, ${now}, ${now})`
    }
    return ids
  })

/** One baseline step per call for each actor; the caller runs an actor's steps one at a time. */
export const baselineStepper = Effect.gen(function* () {
  const sql = yield* SqlClient
  const seqs = new Map<string, bigint>()
  return (actorId: string) =>
    Effect.gen(function* () {
      const expected = seqs.get(actorId) ?? 1n
      const seq = expected + 1n
      const count = Number(seq) - 1
      const at = new Date(yield* Clock.currentTimeMillis)
      const stream = `bench_baseline:${actorId}`
      yield* Effect.gen(function* () {
        const advanced = yield* sql`
          UPDATE actor_snapshots
          SET seq = seq + 1, version = 1, status = 'active', state_value = 'counting',
              snapshot = ${snapshotJson(count)}::jsonb, updated_at = ${at}
          WHERE kind = ${baselineKind} AND actor_id = ${actorId} AND seq = ${expected}
          RETURNING seq`
        if (advanced.length === 0) return yield* Effect.die(new Error(`baseline ${actorId}: seq conflict`))
        const head = yield* sql<{ last_sequence: bigint }>`
          INSERT INTO stream_heads (stream, last_sequence) VALUES (${stream}, 1)
          ON CONFLICT (stream) DO UPDATE SET last_sequence = stream_heads.last_sequence + 1
          RETURNING last_sequence`
        yield* sql`
          INSERT INTO outbox_items (stream, sequence, public_id, type, resource_type, resource_public_id, payload, occurred_at)
          VALUES (${stream}, ${head[0]!.last_sequence}, ${newPublicId()}, 'bench.counted', 'bench_baseline', ${actorId},
                  ${JSON.stringify({ count })}::jsonb, ${at})`
        yield* sql`
          INSERT INTO actor_journal (kind, actor_id, seq, event_type, event, from_state, to_state, actions, at)
          VALUES (${baselineKind}, ${actorId}, ${seq}, 'bench.count', ${event}::jsonb, 'counting', 'counting',
                  ${actions}::jsonb, ${at})`
      }).pipe(sql.withTransaction)
      seqs.set(actorId, seq)
    })
})
