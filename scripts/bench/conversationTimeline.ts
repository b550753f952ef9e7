// The conversation timeline scenario: one conversation of 10,000 turns on `troupe serve`
// (scripts/bench/conversationServer.ts), read through GET .../turns in windows of 25: at the tail
// (no position) and in the middle (before_position=5013, positions 4988..5012). The turns are real
// ones multiplied: a message "hello" and a local/echo reply are made through the doors, then
// positions 3..10,000 are inserted with SQL as copies of those two rows (a message turn, then a
// reply turn, alternating), each with a copy of its active variant, under fresh ids, so the door
// reads the shapes it writes. Beside it, in the same rounds, a bare keyset SELECT of the same rows
// through this process's own pool: the window's 25 turns by (conversation, position) and their
// variants, in one statement, no authentication, standing, pagination probes or projection. Each
// side's answer is checked once (the same 25 positions). Reading: reads/s, ratio = door ÷ bare,
// p50/p99 per read as the client sees it, and the server process's CPU µs per door read.
import { performance } from "node:perf_hooks"
import * as Database from "@troupe/storage/Database"
import { newPublicId } from "@troupe/storage/Ids"
import { Console, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { expectStatus, newConversation, type ServedTroupe, servedTroupe } from "./conversationServer.ts"
import { cpuMicros } from "./http.ts"
import { alternate, formatTable, type Sample, type Timing } from "./measure.ts"

const turnCount = 10_000
const windowSize = 25
const insertChunk = 1000
const readerLevels = [1, 4]

interface Window {
  readonly name: "tail" | "middle"
  readonly beforePosition: number | null
}

const windows: ReadonlyArray<Window> = [
  { name: "tail", beforePosition: null },
  { name: "middle", beforePosition: turnCount / 2 + 13 }
]

export interface TimelineLevel {
  readonly window: string
  readonly readers: number
  readonly door: Sample
  readonly keyset: Sample
  /** door reads/s ÷ bare reads/s. */
  readonly ratio: number
  readonly serverCpuMicrosPerRead: number
}

/** A conversation with a message turn and a completed echo reply, made through the doors. */
const realTurns = (served: ServedTroupe) =>
  Effect.gen(function* () {
    const id = yield* newConversation(served)
    const inputs = `${served.conversations}/${id}/inputs`
    yield* expectStatus(
      yield* served.call("POST", inputs, { input: { kind: "message", text: "hello" } }),
      202,
      "message"
    )
    yield* expectStatus(
      yield* served.call("POST", inputs, {
        input: { kind: "direct_reply", text: "hello", model: { model: "local/echo" } }
      }),
      202,
      "direct reply"
    )
    const deadline = performance.now() + 10_000
    for (;;) {
      const turns = yield* expectStatus(yield* served.call("GET", `${served.conversations}/${id}/turns`), 200, "turns")
      if (turns.turns.length === 2 && turns.turns[1].status === "completed") return id
      if (performance.now() > deadline) {
        const queue = yield* served.call("GET", `${served.conversations}/${id}/inputs`)
        return yield* Effect.die(new Error(`the echo reply did not complete in 10 s: ${JSON.stringify(queue)}`))
      }
      yield* Effect.sleep("50 millis")
    }
  })

/** Positions 3..turnCount as copies of the two real turns and their active variants. */
const multiply = (conversationId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient
    const templates = yield* sql<{ id: string; variants: number }>`
      SELECT t.id::text, (SELECT count(*)::int FROM conversation_variants v WHERE v.turn_id = t.id) AS variants
      FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
      WHERE c.public_id = ${conversationId} ORDER BY t.position`
    if (templates.length !== 2 || templates.some((turn) => turn.variants !== 1)) {
      return yield* Effect.die(new Error(`unexpected template turns: ${JSON.stringify(templates)}`))
    }
    for (let from = 3; from <= turnCount; from += insertChunk) {
      const positions = Array.from({ length: Math.min(insertChunk, turnCount - from + 1) }, (_, index) => from + index)
      const turnIds = positions.map(() => newPublicId())
      const variantIds = positions.map(() => newPublicId())
      const templateIds = positions.map((position) => templates[(position - 1) % 2]!.id)
      yield* sql`
        WITH n AS (
          SELECT * FROM unnest(${turnIds}::uuid[], ${variantIds}::uuid[], ${positions}::int[], ${templateIds}::bigint[])
            AS n(turn_public_id, variant_public_id, position, template_id)
        ), turns AS (
          INSERT INTO conversation_turns (public_id, conversation_id, position, kind, role, status, visibility, origin,
            answerer_id, speaker_id, prompt_text, input_public_id, active_variant_public_id, created_at, updated_at)
          SELECT n.turn_public_id, t.conversation_id, n.position, t.kind, t.role, t.status, t.visibility, t.origin,
            t.answerer_id, t.speaker_id, t.prompt_text, t.input_public_id, n.variant_public_id, t.created_at,
            t.updated_at
          FROM n JOIN conversation_turns t ON t.id = n.template_id
          RETURNING id, public_id
        )
        INSERT INTO conversation_variants (public_id, turn_id, source, status, model, content, usage,
          failure_reason_key, origin_variant_public_id, inference_request_public_id, run_public_id, concealed,
          memory_context, created_at, updated_at)
        SELECT n.variant_public_id, turns.id, v.source, v.status, v.model, v.content, v.usage, v.failure_reason_key,
          v.origin_variant_public_id, v.inference_request_public_id, v.run_public_id, v.concealed, v.memory_context,
          v.created_at, v.updated_at
        FROM n JOIN turns ON turns.public_id = n.turn_public_id
          JOIN conversation_turns t ON t.id = n.template_id
          JOIN conversation_variants v ON v.public_id = t.active_variant_public_id`
    }
    yield* sql`ANALYZE conversation_turns`
    yield* sql`ANALYZE conversation_variants`
  }).pipe(Effect.orDie)

/** The window's turns and their variants as one bare keyset SELECT; answers the turns' positions. */
const keysetWindow = (sql: SqlClient, conversationRowId: string, window: Window) =>
  Effect.map(
    sql<{ position: number }>`
      SELECT t.*, v.public_id AS variant_public_id, v.source, v.status AS variant_status, v.model, v.content, v.usage,
        v.failure_reason_key AS variant_failure_reason_key, v.origin_variant_public_id,
        v.inference_request_public_id, v.run_public_id, v.concealed, v.memory_context,
        v.created_at AS variant_created_at
      FROM (SELECT * FROM conversation_turns
            WHERE conversation_id = ${conversationRowId} AND position < ${window.beforePosition ?? 2147483647}
            ORDER BY position DESC LIMIT ${windowSize}) t
      JOIN conversation_variants v ON v.turn_id = t.id
      ORDER BY t.position, v.id`,
    (rows) => rows.map((row) => row.position)
  ).pipe(Effect.orDie)

/** The window through the door; answers its turns' positions. */
const doorWindow = (served: ServedTroupe, conversationId: string, window: Window) =>
  Effect.flatMap(
    served.call(
      "GET",
      `${served.conversations}/${conversationId}/turns?limit=${windowSize}` +
        (window.beforePosition === null ? "" : `&before_position=${window.beforePosition}`)
    ),
    (answer) =>
      Effect.map(expectStatus(answer, 200, "GET turns"), (body) =>
        (body.turns as Array<{ position: number }>).map((turn) => turn.position)
      )
  )

const expectedPositions = (window: Window) => {
  const below = window.beforePosition ?? turnCount + 1
  return Array.from({ length: windowSize }, (_, index) => below - windowSize + index)
}

const check = (side: string, window: Window, positions: ReadonlyArray<number>) =>
  JSON.stringify(positions) === JSON.stringify(expectedPositions(window))
    ? Effect.void
    : Effect.die(new Error(`${side} ${window.name}: positions ${JSON.stringify(positions)}`))

/** Seeds the timeline and measures every window and level; undefined (with a note) without PostgreSQL. */
export const conversationTimelineScenario = (timing: Timing) =>
  Effect.gen(function* () {
    const served = yield* servedTroupe("conversation-timeline")
    if (served === undefined) {
      yield* Console.log("Conversation timeline: skipped (it runs `troupe serve` on PostgreSQL, which did not answer)")
      return undefined
    }
    yield* Console.log(timelineHeader)
    return yield* Effect.gen(function* () {
      const sql = yield* SqlClient
      const conversationId = yield* realTurns(served)
      yield* multiply(conversationId)
      const rows = yield* Effect.orDie(
        sql<{ id: string }>`SELECT id::text FROM conversations WHERE public_id = ${conversationId}`
      )
      const rowId = rows[0]!.id
      const levels: Array<TimelineLevel> = []
      for (const window of windows) {
        yield* check("door", window, yield* doorWindow(served, conversationId, window))
        yield* check("keyset SELECT", window, yield* keysetWindow(sql, rowId, window))
        for (const readers of readerLevels) {
          const names = Array.from({ length: readers }, (_, index) => `reader-${index}`)
          let doorReads = 0
          const cpuBefore = yield* cpuMicros(served.pid)
          const { subject, baseline } = yield* alternate(
            timing,
            {
              actors: names,
              step: () => Effect.map(doorWindow(served, conversationId, window), () => void doorReads++)
            },
            { actors: names, step: () => Effect.asVoid(keysetWindow(sql, rowId, window)) }
          )
          const serverCpu = (yield* cpuMicros(served.pid)) - cpuBefore
          levels.push({
            window: window.name,
            readers,
            door: subject,
            keyset: baseline,
            ratio: subject.perSecond / baseline.perSecond,
            serverCpuMicrosPerRead: serverCpu / doorReads
          })
        }
      }
      return levels
    }).pipe(Effect.provide(Database.layer(served.database)))
  }).pipe(Effect.scoped)

const timelineHeader =
  `Conversation timeline: GET .../turns windows of ${windowSize} of a ${turnCount.toLocaleString("en")}-turn ` +
  "conversation through troupe serve (tail, and before_position=5013) against a bare keyset SELECT of the same " +
  "turns and variants; ratio = door reads/s ÷ bare reads/s"

const fixed = (value: number, digits: number) => value.toFixed(digits)

export const timelineTable = (levels: ReadonlyArray<TimelineLevel>) =>
  formatTable(
    [
      "window",
      "readers",
      "door reads/s",
      "bare reads/s",
      "ratio",
      "p50/p99 ms door | bare",
      "server CPU µs/read",
      "node CPU µs/read door | bare"
    ],
    levels.map((level) => [
      level.window,
      String(level.readers),
      fixed(level.door.perSecond, 0),
      fixed(level.keyset.perSecond, 0),
      fixed(level.ratio, 2),
      `${fixed(level.door.p50Ms, 2)}/${fixed(level.door.p99Ms, 1)} | ${fixed(level.keyset.p50Ms, 2)}/${fixed(level.keyset.p99Ms, 1)}`,
      fixed(level.serverCpuMicrosPerRead, 0),
      `${fixed(level.door.cpuMicrosPerStep, 0)} | ${fixed(level.keyset.cpuMicrosPerStep, 0)}`
    ])
  )
