// End to end (issue 11, "Must hold under load and faults"): `troupe serve` on PostgreSQL killed
// with SIGKILL while 20 conversations each have inputs queued behind a streaming reply (a slow
// local/script directive), then started again on the same database. Every 202-accepted input is
// consumed exactly once (one turn each, the row consumed with its turn's id), every reply ends
// completed (a reply cut mid-call is retried by its inference request, whose lease outlives the
// dead runner, and told back to its conversation), none is left running, and each conversation's
// feed stays contiguous from 1 with what was narrated before the kill kept as its prefix. The test
// waits on the steps the servers NOTIFY, reading the database on each.
import { afterAll, describe, expect, it } from "vitest"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { connectAgent, signedIn } from "../support/members.ts"
import { createOwner, ownerCredentials } from "../support/people.ts"
import { startTestServer } from "../support/server.ts"
import { openStepWatch, type StepWatch } from "../support/step-watch.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const conversationCount = 20
/** Replies seen streaming (a text_delta and no result yet) before the kill. */
const streamingBeforeKill = 5
/** 24 output tokens 100 ms apart after 200 ms: each first reply streams for about 2.6 s. */
const reply = Array.from({ length: 24 }, (_, index) => `word${index + 1}`).join(" ")
const directive = JSON.stringify({ reply, delay_ms: 200, pace_ms: 100 })
const attemptBudget = 4

const databases = new Set<TestDatabase>()
const watches = new Set<StepWatch>()
afterAll(async () => {
  await killAll()
  for (const watch of watches) await watch.close()
  for (const database of databases) await database.drop()
})

interface Item {
  readonly sequence: number
  readonly public_id: string
  readonly type: string
  readonly payload: Record<string, any>
}

/** An agent's member token, a workspace and its conversations, made by an in-process server that then stops. */
const prepare = async (database: TestDatabase) => {
  databases.add(database)
  const server = await startTestServer({ database: { ...database, drop: async () => {} } })
  await createOwner(server)
  const agent = await connectAgent(server, await signedIn(server, ownerCredentials), "crash-talker")
  const call = (path: string, body: unknown, key: string) =>
    request(server.baseUrl, "POST", `/agent_api/v1${path}`, {
      body,
      headers: { ...bearer(agent.token), "idempotency-key": key }
    })
  const made = await call("/workspaces", { workspace: { name: "conversations across a crash" } }, "crash-workspace")
  expect(made.status).toBe(201)
  const workspaceId = made.body.workspace.public_id as string
  const conversationIds: Array<string> = []
  for (let index = 0; index < conversationCount; index++) {
    const conversation = await call(
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: `talk ${index}` } },
      `crash-conversation-${index}`
    )
    expect(conversation.status).toBe(201)
    conversationIds.push(conversation.body.conversation.public_id)
  }
  await server.close()
  return { token: agent.token, workspaceId, conversationIds }
}

/** What each conversation is sent, in order: a slow reply heads; a message, a quick reply and a scheduled message queue behind it. */
const inputsOf = (index: number) => [
  { kind: "direct_reply", text: directive, model: { model: "local/script" } },
  { kind: "message", text: `note ${index}` },
  { kind: "direct_reply", text: `again ${index}`, model: { model: "local/echo" } },
  { kind: "message", text: `later ${index}`, deliver_in: "2s" }
]

/** The stored items of `streams`, by stream, in sequence order. */
const storedItems = async (watch: StepWatch, streams: ReadonlyArray<string>) => {
  const rows = await watch.query<{ stream: string; sequence: string; public_id: string; type: string; payload: any }>(
    `SELECT stream, sequence::text AS sequence, public_id::text AS public_id, type, payload FROM outbox_items
     WHERE stream = ANY($1::text[]) ORDER BY outbox_items.stream, outbox_items.sequence`,
    [streams]
  )
  const byStream = new Map<string, Array<Item>>(streams.map((stream) => [stream, []]))
  for (const row of rows) {
    byStream.get(row.stream)!.push({
      sequence: Number(row.sequence),
      public_id: row.public_id,
      type: row.type,
      payload: row.payload
    })
  }
  return byStream
}

/** The inference requests the conversations' replies asked so far. */
const askedRequests = (watch: StepWatch, conversationIds: ReadonlyArray<string>) =>
  watch
    .query<{ request_id: string }>(
      `SELECT r.public_id::text AS request_id FROM inference_requests r
       JOIN conversations c ON c.id = r.asked_by_conversation_id WHERE c.public_id = ANY($1::uuid[])`,
      [conversationIds]
    )
    .then((rows) => rows.map((row) => row.request_id))

const isStreaming = (items: ReadonlyArray<Item>) =>
  items.some((item) => item.type === "text_delta") && !items.some((item) => item.type === "result")

/** How much is still open: unconsumed inputs, turns not yet ended, and turns made. */
const openWork = (watch: StepWatch, conversationIds: ReadonlyArray<string>) =>
  watch
    .query<{ open_inputs: number; open_turns: number; turns: number }>(
      `SELECT
         (SELECT count(*)::int FROM conversation_inputs i JOIN conversations c ON c.id = i.conversation_id
          WHERE c.public_id = ANY($1::uuid[]) AND i.state <> 'consumed') AS open_inputs,
         (SELECT count(*)::int FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
          WHERE c.public_id = ANY($1::uuid[]) AND t.status IN ('pending', 'running')) AS open_turns,
         (SELECT count(*)::int FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
          WHERE c.public_id = ANY($1::uuid[])) AS turns`,
      [conversationIds]
    )
    .then((rows) => rows[0]!)

/** The conversations with work left: their lane, turns, pending jobs and messages, and the lane's request. */
const stillOpen = (watch: StepWatch, conversationIds: ReadonlyArray<string>) =>
  watch.query(
    `SELECT c.public_id::text AS conversation, s.state_value, s.snapshot -> 'context' -> 'lane' AS lane,
            (SELECT json_agg(json_build_object('position', t.position, 'status', t.status) ORDER BY t.position)
             FROM conversation_turns t WHERE t.conversation_id = c.id) AS turns,
            (SELECT json_agg(json_build_object('name', j.name, 'attempts', j.attempts, 'error', j.last_error))
             FROM actor_jobs j WHERE j.kind = 'conversation' AND j.actor_id = c.public_id AND j.state = 'pending') AS jobs,
            (SELECT json_agg(json_build_object('state', m.state, 'attempts', m.attempts, 'error', m.last_error,
                                               'event', m.event ->> 'type'))
             FROM actor_messages m WHERE m.to_kind = 'conversation' AND m.to_actor_id = c.public_id) AS messages,
            (SELECT json_build_object('state', rs.state_value, 'status', rs.status,
               'jobs', (SELECT json_agg(json_build_object('name', j.name, 'state', j.state, 'attempts', j.attempts,
                                                          'lease_until', j.lease_until, 'error', j.last_error))
                        FROM actor_jobs j WHERE j.kind = 'inferenceRequest' AND j.actor_id = rs.actor_id),
               'items', (SELECT json_agg(o.type || ' ' || COALESCE(o.payload ->> 'status', o.payload ->> 'reason', '')
                                         ORDER BY o.sequence)
                         FROM outbox_items o WHERE o.stream = 'inference_request:' || rs.actor_id::text
                           AND o.type <> 'text_delta'))
             FROM actor_snapshots rs WHERE rs.kind = 'inferenceRequest'
               AND rs.actor_id::text = s.snapshot -> 'context' -> 'lane' ->> 'requestId') AS request
     FROM conversations c JOIN actor_snapshots s ON s.kind = 'conversation' AND s.actor_id = c.public_id
     WHERE c.public_id = ANY($1::uuid[])
       AND (EXISTS (SELECT 1 FROM conversation_inputs i WHERE i.conversation_id = c.id AND i.state <> 'consumed')
            OR EXISTS (SELECT 1 FROM conversation_turns t WHERE t.conversation_id = c.id
                       AND t.status IN ('pending', 'running')))`,
    [conversationIds]
  )

/**
 * Told replies to the conversations that a node leased and had not delivered: after a kill they
 * wait until the lease ends (MessageRunner's 2 minutes), the reply turn running meanwhile.
 */
const leasedReplies = (watch: StepWatch, conversationIds: ReadonlyArray<string>) =>
  watch.query(
    `SELECT m.to_actor_id::text AS conversation, m.lease_until FROM actor_messages m
     WHERE m.to_kind = 'conversation' AND m.to_actor_id = ANY($1::uuid[]) AND m.state = 'pending'
       AND m.lease_until > now()`,
    [conversationIds]
  )

/** Every item of a feed, page after page of 200. */
const replay = async (baseUrl: string, token: string, path: string) => {
  const items: Array<Item> = []
  let after = ""
  for (;;) {
    const page = await request(baseUrl, "GET", `${path}/events?limit=200${after === "" ? "" : `&after=${after}`}`, {
      headers: bearer(token)
    })
    expect(page.status).toBe(200)
    items.push(...page.body.events)
    if (page.body.events.length < 200) return { items, watermark: page.body.pagination.watermark as number }
    after = page.body.pagination.next_after
  }
}

describe.skipIf(!onPostgres)("conversations when the server is killed mid-reply", { timeout: 90_000 }, () => {
  it("every accepted input is consumed once, every reply ends completed, every feed stays contiguous", async () => {
    const database = await freshPostgres()
    const { token, workspaceId, conversationIds } = await prepare(database)
    const watch = await openStepWatch(database)
    watches.add(watch)
    const path = (id: string) => `/agent_api/v1/workspaces/${workspaceId}/conversations/${id}`
    const feeds = conversationIds.map((id) => `conversation:${id}`)

    const first = await troupeServe(database.config)
    // Each conversation's inputs in order (its queue's order), the conversations side by side.
    const accepted = await Promise.all(
      conversationIds.map(async (id, index) => {
        const answers = []
        for (const [at, input] of inputsOf(index).entries()) {
          const answer = await request(first.baseUrl, "POST", `${path(id)}/inputs`, {
            body: { input },
            headers: { ...bearer(token), "idempotency-key": `crash-${index}-${at}` }
          })
          expect(answer.status, JSON.stringify(answer.body)).toBe(202)
          answers.push(answer.body.input.public_id as string)
        }
        return answers
      })
    )

    // The kill comes while replies stream (the runner streams 8 provider calls at once; the rest
    // of the first replies wait for a slot) and inputs queue behind them, before any reply ended:
    // a reply's `inference.replied` that the killed node had leased would wait out the message
    // runner's 2-minute lease after the restart (a known gap, conversation-reply-lease.test.ts).
    const atKill = async () => {
      const requests = await askedRequests(watch, conversationIds)
      const items = await storedItems(
        watch,
        requests.map((id) => `inference_request:${id}`)
      )
      const all = [...items.values()]
      const streaming = all.filter(isStreaming).length
      const ended = all.filter((stream) => stream.some((item) => item.type === "result")).length
      return { requests, items, ready: streaming >= streamingBeforeKill && ended === 0 }
    }
    await watch.until("replies streaming", 30_000, () => atKill().then((state) => (state.ready ? true : undefined)))
    await first.kill9()

    // What the killed server left: each feed so far, the queues, and the replies cut mid-stream.
    const { requests: askedBefore, items: requestItems } = await atKill()
    const feedsBefore = await storedItems(watch, feeds)
    const before = await openWork(watch, conversationIds)
    expect(before.open_inputs).toBeGreaterThan(0)
    expect(before.open_turns).toBeGreaterThan(0)
    const cut = askedBefore.filter((id) => isStreaming(requestItems.get(`inference_request:${id}`)!))
    expect(cut.length).toBeGreaterThanOrEqual(1)
    expect(await leasedReplies(watch, conversationIds), "a told reply the killed node held").toEqual([])

    const second = await troupeServe(database.config)
    await watch
      .until("every conversation to settle", 45_000, async () => {
        const open = await openWork(watch, conversationIds)
        return open.open_inputs === 0 && open.open_turns === 0 && open.turns === 4 * conversationCount
          ? true
          : undefined
      })
      .catch(async (error) => {
        throw new Error(
          `${(error as Error).message}; still open:\n${JSON.stringify(await stillOpen(watch, conversationIds), null, 1)}`
        )
      })

    const call = (method: string, rest: string) =>
      request(second.baseUrl, method, `/agent_api/v1/workspaces/${workspaceId}${rest}`, { headers: bearer(token) })
    for (const [index, id] of conversationIds.entries()) {
      const inputIds = accepted[index]!
      // No accepted input lost: the queue is empty, each input opened one turn, in queue order.
      const queue = await call("GET", `/conversations/${id}/inputs`)
      expect(queue.body, id).toMatchObject({ inputs: [], input_queue: { limit: 16, held: 0 } })
      const turns = (await call("GET", `/conversations/${id}/turns?limit=100`)).body.turns as Array<any>
      expect(
        turns.map((turn) => [turn.position, turn.kind, turn.status, turn.content, turn.input_public_id]),
        id
      ).toEqual([
        [1, "direct_reply", "completed", reply, inputIds[0]],
        [2, "message", "completed", `note ${index}`, inputIds[1]],
        // The message before it merges into its user message (adjacent same-role messages merge).
        [3, "direct_reply", "completed", `echo: note ${index}\n\nagain ${index}`, inputIds[2]],
        [4, "message", "completed", `later ${index}`, inputIds[3]]
      ])
      for (const [at, inputId] of inputIds.entries()) {
        const materialization = await call("GET", `/conversations/${id}/inputs/${inputId}/materialization`)
        expect(materialization.body.materialization, id).toMatchObject({
          input_public_id: inputId,
          turn_public_id: turns[at].public_id,
          variant_public_id: turns[at].active_variant.public_id
        })
      }

      // The feed: contiguous from 1, no repeat, what the killed server narrated kept as its prefix.
      const { items, watermark } = await replay(second.baseUrl, token, path(id))
      expect(
        items.map((item) => item.sequence),
        id
      ).toEqual(Array.from({ length: items.length }, (_, at) => at + 1))
      expect(new Set(items.map((item) => item.public_id)).size, id).toBe(items.length)
      expect(watermark, id).toBe(items.length)
      const prefix = feedsBefore.get(`conversation:${id}`)!
      expect(
        items.slice(0, prefix.length).map((item) => item.public_id),
        id
      ).toEqual(prefix.map((item) => item.public_id))
      // Each input accepted, materialized and each turn ended exactly once.
      const of = (type: string) => items.filter((item) => item.type === type)
      expect(
        of("input_accepted").map((item) => [item.payload.input_public_id, item.payload.queue_position]),
        id
      ).toEqual(inputIds.map((inputId, at) => [inputId, at]))
      expect(
        of("input_materialized").map((item) => [item.payload.input_public_id, item.payload.turn_public_id]),
        id
      ).toEqual(inputIds.map((inputId, at) => [inputId, turns[at].public_id]))
      expect(
        of("turn_created").map((item) => item.payload.position),
        id
      ).toEqual([1, 2, 3, 4])
      expect(
        of("turn_status")
          .filter((item) => item.payload.status !== "running")
          .map((item) => [item.payload.turn_public_id, item.payload.status]),
        id
      ).toEqual(turns.map((turn) => [turn.public_id, "completed"]))
      expect(
        of("usage").map((item) => item.payload.turn_public_id),
        id
      ).toEqual([turns[0].public_id, turns[2].public_id])
      expect(of("input_blocked"), id).toEqual([])
    }

    // The rows agree: one turn per input, each input consumed with its turn's id, one sample per
    // reply (one inference request each, completed within its attempt budget).
    const rows = await watch.query<{ inputs: number; consumed_with_turn: number; turns_by_input: number }>(
      `SELECT
         (SELECT count(*)::int FROM conversation_inputs i JOIN conversations c ON c.id = i.conversation_id
          WHERE c.public_id = ANY($1::uuid[])) AS inputs,
         (SELECT count(*)::int FROM conversation_inputs i JOIN conversations c ON c.id = i.conversation_id
          JOIN conversation_turns t ON t.public_id = i.turn_public_id AND t.input_public_id = i.public_id
          WHERE c.public_id = ANY($1::uuid[]) AND i.state = 'consumed' AND i.consumed_at IS NOT NULL) AS consumed_with_turn,
         (SELECT count(DISTINCT t.input_public_id)::int FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
          WHERE c.public_id = ANY($1::uuid[])) AS turns_by_input`,
      [conversationIds]
    )
    expect(rows[0]).toEqual({
      inputs: 4 * conversationCount,
      consumed_with_turn: 4 * conversationCount,
      turns_by_input: 4 * conversationCount
    })
    const samples = await watch.query<{ turn: string; variants: number; request: string | null; status: string }>(
      `SELECT t.public_id::text AS turn, (SELECT count(*)::int FROM conversation_variants w WHERE w.turn_id = t.id) AS variants,
              v.inference_request_public_id::text AS request, r.status
       FROM conversation_turns t JOIN conversations c ON c.id = t.conversation_id
       JOIN conversation_variants v ON v.public_id = t.active_variant_public_id
       LEFT JOIN inference_requests r ON r.public_id = v.inference_request_public_id
       WHERE c.public_id = ANY($1::uuid[]) AND t.kind = 'direct_reply'`,
      [conversationIds]
    )
    expect(samples).toHaveLength(2 * conversationCount)
    for (const sample of samples) expect(sample, sample.turn).toMatchObject({ variants: 1, status: "completed" })
    const requests = await askedRequests(watch, conversationIds)
    expect(requests.sort()).toEqual(samples.map((sample) => sample.request).sort())

    // A reply cut mid-stream: its request rolled the attempt back (retry), ran another within its
    // budget, and told the conversation, whose turn completed with the whole reply.
    const afterItems = await storedItems(
      watch,
      cut.map((id) => `inference_request:${id}`)
    )
    for (const requestId of cut) {
      const items = afterItems.get(`inference_request:${requestId}`)!
      const prefix = requestItems.get(`inference_request:${requestId}`)!
      const attempt = prefix.findLast((item) => item.type === "run_status")!.payload.attempt as number
      expect(items[prefix.length], requestId).toMatchObject({ type: "rollback", payload: { reason: "retry", attempt } })
      expect(
        items.filter((item) => item.type === "result"),
        requestId
      ).toHaveLength(1)
      const statuses = items.filter((item) => item.type === "run_status")
      expect(Math.max(...statuses.map((item) => item.payload.attempt)), requestId).toBeLessThanOrEqual(attemptBudget)
      const [settled] = await watch.query<{ status: string; content: string }>(
        `SELECT t.status, v.content FROM conversation_variants v JOIN conversation_turns t ON t.id = v.turn_id
         WHERE v.inference_request_public_id = $1::uuid`,
        [requestId]
      )
      expect(settled, requestId).toEqual({ status: "completed", content: reply })
    }
    await second.stop()
  })
})
