import { afterAll, describe, expect, it } from "vitest"
import { freshPostgres, postgresReachable, type TestDatabase } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { createOwner, personalToken } from "../support/people.ts"
import { startTestServer } from "../support/server.ts"
import { openStepWatch, type StepWatch } from "../support/step-watch.ts"
import { killAll, troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const requestCount = 50
/** Requests seen streaming (a text_delta and no result yet) before the kill. */
const streamingBeforeKill = 5
/** 24 output tokens 125 ms apart: each reply streams for about 3 s. */
const reply = Array.from({ length: 24 }, (_, index) => `word${index + 1}`).join(" ")
const directive = JSON.stringify({ reply, pace_ms: 125 })
const attemptBudget = 4
const terminal = ["completed", "failed", "canceled", "timed_out"]

const databases = new Set<TestDatabase>()
const watches = new Set<StepWatch>()
afterAll(async () => {
  await killAll()
  for (const watch of watches) await watch.close()
  for (const database of databases) await database.drop()
})

/** The owner's member token and a workspace, made by an in-process server that then stops cleanly. */
const prepare = async (database: TestDatabase) => {
  databases.add(database)
  const server = await startTestServer({ database: { ...database, drop: async () => {} } })
  const owner = await createOwner(server)
  const token = await personalToken(server, owner, "member")
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    body: { workspace: { name: "inference across a crash" } },
    headers: { ...bearer(token), "idempotency-key": "inference-crash-workspace" }
  })
  expect(made.status).toBe(201)
  await server.close()
  return { token, workspaceId: made.body.workspace.public_id as string }
}

interface Item {
  readonly sequence: number
  readonly public_id: string
  readonly type: string
  readonly payload: Record<string, any>
}

const openWatch = async (database: TestDatabase): Promise<StepWatch> => {
  const watch = await openStepWatch(database)
  watches.add(watch)
  return watch
}

/** Every stream item of the requests, by request, in sequence order, as the database holds them. */
const storedItems = async (watch: StepWatch, ids: ReadonlyArray<string>) => {
  const rows = await watch.query<{ stream: string; sequence: string; public_id: string; type: string; payload: any }>(
    `SELECT stream, sequence::text AS sequence, public_id::text AS public_id, type, payload FROM outbox_items
     WHERE stream = ANY($1::text[]) ORDER BY outbox_items.stream, outbox_items.sequence`,
    [ids.map((id) => `inference_request:${id}`)]
  )
  const byRequest = new Map<string, Array<Item>>(ids.map((id) => [id, []]))
  for (const row of rows) {
    byRequest.get(row.stream.slice("inference_request:".length))!.push({
      sequence: Number(row.sequence),
      public_id: row.public_id,
      type: row.type,
      payload: row.payload
    })
  }
  return byRequest
}

/** Requests whose provider call a runner leased but has not begun (the actor still queued). */
const leasedUnstarted = (watch: StepWatch, ids: ReadonlyArray<string>) =>
  watch
    .query<{ actor_id: string }>(
      `SELECT s.actor_id::text AS actor_id FROM actor_jobs j JOIN actor_snapshots s USING (kind, actor_id)
       WHERE j.kind = 'inferenceRequest' AND j.state = 'pending' AND j.lease_until IS NOT NULL
         AND s.state_value = 'live.queued' AND s.actor_id = ANY($1::uuid[])`,
      [ids]
    )
    .then((rows) => rows.map((row) => row.actor_id))

const isStreaming = (items: ReadonlyArray<Item>) =>
  items.some((item) => item.type === "text_delta") && !items.some((item) => item.type === "result")

/** Every item of a request's replay, page after page of 200. */
const replay = async (baseUrl: string, token: string, path: string) => {
  const items: Array<Item> = []
  let after = ""
  let watermark = 0
  for (;;) {
    const page = await request(baseUrl, "GET", `${path}/events?limit=200${after === "" ? "" : `&after=${after}`}`, {
      headers: bearer(token)
    })
    expect(page.status).toBe(200)
    items.push(...page.body.events)
    watermark = page.body.pagination.watermark
    if (page.body.events.length < 200) return { items, watermark }
    after = page.body.pagination.next_after
  }
}

/** The text the attempt that ended the request streamed: the deltas after the last rollback. */
const lastAttemptText = (items: ReadonlyArray<Item>) => {
  const from = items.findLastIndex((item) => item.type === "rollback") + 1
  return items
    .slice(from)
    .filter((item) => item.type === "text_delta")
    .map((item) => item.payload.text)
    .join("")
}

describe.skipIf(!onPostgres)("inference requests when the server is killed mid-stream", { timeout: 300_000 }, () => {
  it("every accepted request ends exactly once, completed within its budget, its replay contiguous", async () => {
    const database = await freshPostgres()
    const { token, workspaceId } = await prepare(database)
    const watch = await openWatch(database)
    const path = `/agent_api/v1/workspaces/${workspaceId}/inference_requests`

    const first = await troupeServe(database.config)
    const accepted = await Promise.all(
      Array.from({ length: requestCount }, (_, index) =>
        request(first.baseUrl, "POST", path, {
          body: {
            inference_request: { workload: "text_generation", model: { model: "local/script" }, input: directive }
          },
          headers: { ...bearer(token), "idempotency-key": `crash-${index}` }
        })
      )
    )
    for (const response of accepted) expect(response.status).toBe(202)
    const ids = accepted.map((response) => response.body.inference_request.public_id as string)
    expect(new Set(ids).size).toBe(requestCount)

    // The kill comes while requests stream and, as the runner works, while it holds jobs whose
    // call has not begun (leased ahead of a free slot), or else once a first wave ended.
    const atKill = () =>
      Promise.all([storedItems(watch, ids), leasedUnstarted(watch, ids)]).then(([items, unstarted]) => {
        const all = [...items.values()]
        const streaming = all.filter(isStreaming).length
        const ended = all.filter((stream) => stream.some((item) => item.type === "result")).length
        return { items, unstarted, ready: streaming >= streamingBeforeKill && (unstarted.length > 0 || ended >= 5) }
      })
    await watch.until("requests streaming", 90_000, () => atKill().then((state) => (state.ready ? true : undefined)))
    await first.kill9()

    // What the killed server left: each request's items so far, which were cut mid-stream, and
    // which had a job leased whose call had not begun.
    const { items: beforeRestart, unstarted } = await atKill()
    // A request seen streaming just before the kill may have ended before it: at least one was cut.
    const cut = ids.filter((id) => isStreaming(beforeRestart.get(id)!))
    expect(cut.length).toBeGreaterThanOrEqual(1)

    const second = await troupeServe(database.config)
    await watch
      .until("every request to end", 150_000, async () => {
        const rows = await watch.query<{ actor_id: string; state_value: string }>(
          `SELECT actor_id::text AS actor_id, state_value FROM actor_snapshots
           WHERE kind = 'inferenceRequest' AND actor_id = ANY($1::uuid[])`,
          [ids]
        )
        return rows.length === requestCount && rows.every((row) => terminal.includes(row.state_value))
          ? true
          : undefined
      })
      .catch(async (error) => {
        const open = await watch.query<{ actor_id: string; state_value: string; jobs: unknown }>(
          `SELECT s.actor_id::text AS actor_id, s.state_value,
                  (SELECT json_agg(json_build_object('name', j.name, 'state', j.state, 'attempts', j.attempts,
                                                     'params', j.params) ORDER BY j.id)
                   FROM actor_jobs j WHERE j.kind = s.kind AND j.actor_id = s.actor_id) AS jobs
           FROM actor_snapshots s
           WHERE s.kind = 'inferenceRequest' AND s.actor_id = ANY($1::uuid[])
             AND s.state_value NOT IN ('completed', 'failed', 'canceled', 'timed_out')`,
          [ids]
        )
        throw new Error(`${(error as Error).message}; still open:\n${JSON.stringify(open, null, 1)}`)
      })

    for (const id of ids) {
      const read = await request(second.baseUrl, "GET", `${path}/${id}`, { headers: bearer(token) })
      expect(read.status).toBe(200)
      const row = read.body.inference_request
      expect(row.status, id).toBe("completed")
      expect(row.result.output_text, id).toBe(reply)
      expect(row.usage_summary.request_count, id).toBeLessThanOrEqual(attemptBudget)

      const { items, watermark } = await replay(second.baseUrl, token, `${path}/${id}`)
      // Contiguous from 1, no repeat, the watermark at the last; what the killed server streamed kept.
      expect(
        items.map((item) => item.sequence),
        id
      ).toEqual(Array.from({ length: items.length }, (_, index) => index + 1))
      expect(new Set(items.map((item) => item.public_id)).size, id).toBe(items.length)
      expect(watermark, id).toBe(items.length)
      const prefix = beforeRestart.get(id)!
      expect(
        items.slice(0, prefix.length).map((item) => item.public_id),
        id
      ).toEqual(prefix.map((item) => item.public_id))
      // Ended once: one `result`, last, after the one run_status completed; the budget held.
      expect(
        items.filter((item) => item.type === "result"),
        id
      ).toHaveLength(1)
      expect(items.at(-1)!.type, id).toBe("result")
      const statuses = items.filter((item) => item.type === "run_status")
      expect(
        statuses.filter((item) => item.payload.status === "completed"),
        id
      ).toHaveLength(1)
      expect(Math.max(...statuses.map((item) => item.payload.attempt)), id).toBeLessThanOrEqual(attemptBudget)
      expect(lastAttemptText(items), id).toBe(reply)
      // A rollback drops an attempt: the next item queues the next one.
      for (const [index, item] of items.entries()) {
        if (item.type !== "rollback") continue
        expect(item.payload.reason, id).toBe("retry")
        expect(items[index + 1]!.payload, id).toMatchObject({ status: "queued", attempt: item.payload.attempt + 1 })
      }
    }

    // A request cut mid-stream: its attempt rolled back (retry), then a new attempt streamed the reply.
    for (const id of cut) {
      const { items } = await replay(second.baseUrl, token, `${path}/${id}`)
      const prefix = beforeRestart.get(id)!
      const attempt = prefix.findLast((item) => item.type === "run_status")!.payload.attempt as number
      expect(prefix.at(-1)!.type, id).toBe("text_delta")
      expect(items[prefix.length], id).toMatchObject({ type: "rollback", payload: { reason: "retry", attempt } })
      expect(items[prefix.length + 1], id).toMatchObject({
        type: "run_status",
        payload: { status: "queued", attempt: attempt + 1 }
      })
      expect(items[prefix.length + 2], id).toMatchObject({
        type: "run_status",
        payload: { status: "running", attempt: attempt + 1 }
      })
    }
    // A request whose job was leased but whose call had not begun lost nothing: its first
    // attempt ran after the restart, with no rollback.
    for (const id of unstarted) {
      const { items } = await replay(second.baseUrl, token, `${path}/${id}`)
      expect(
        items.filter((item) => item.type === "rollback"),
        id
      ).toEqual([])
      expect(
        items.filter((item) => item.type === "run_status").map((item) => item.payload.attempt),
        id
      ).toEqual([1, 1, 1])
    }
    await second.stop()
  })
})
