// Issue 11, "Must hold under load and faults": 50 input creates raced on one conversation through
// the real server. The queue bound (16 caller-authored unconsumed rows) holds exactly, queue
// positions follow the order the acceptances committed (the feed's input_accepted sequence), and
// an Idempotency-Key sent several times at once answers one row: the first acceptance, replayed.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })
const conversationPath = (id: string, rest = "") => `/workspaces/${workspaceId}/conversations/${id}${rest}`

const createConversation = async (key: string) => {
  const made = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations`,
    { conversation: {} },
    {
      "idempotency-key": key
    }
  )
  expect(made.status).toBe(201)
  return made.body.conversation.public_id as string
}

interface Send {
  readonly key: string
  readonly input: Record<string, unknown>
}

/** Every send at once; the answers in the order of `sends`. */
const race = (id: string, sends: ReadonlyArray<Send>) =>
  Promise.all(
    sends.map((send) =>
      call("POST", conversationPath(id, "/inputs"), { input: send.input }, { "idempotency-key": send.key })
    )
  )

/** The conversation's input_accepted items, in feed (commit) order. */
const acceptedInFeed = async (id: string) => {
  const page = await call("GET", conversationPath(id, "/events?limit=200"))
  expect(page.status).toBe(200)
  const events = page.body.events as Array<{ sequence: number; type: string; payload: Record<string, any> }>
  expect(events.length).toBeLessThan(200)
  return { events, accepted: events.filter((item) => item.type === "input_accepted") }
}

/** Every input row the conversation has, consumed or not, as the database holds them. */
const storedInputs = (id: string) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      return yield* sql<{ public_id: string; queue_position: number; state: string; turn_public_id: string | null }>`
        SELECT i.public_id::text AS public_id, i.queue_position, i.state, i.turn_public_id::text AS turn_public_id
        FROM conversation_inputs i JOIN conversations c ON c.id = i.conversation_id
        WHERE c.public_id = ${id} ORDER BY i.queue_position`
    })
  )

/** Groups the answers by the key they were sent with. */
const byKey = (sends: ReadonlyArray<Send>, answers: ReadonlyArray<JsonResponse>) => {
  const groups = new Map<string, Array<JsonResponse>>()
  sends.forEach((send, index) => {
    groups.set(send.key, [...(groups.get(send.key) ?? []), answers[index]!])
  })
  return groups
}

/**
 * Every answer is a 202 or 409 input_queue_full; a key's answers are all one or the other; a key
 * accepted answers one row, first as new, then replayed verbatim. Answers each accepted key's
 * original acceptance body.
 */
const judgeKeys = (sends: ReadonlyArray<Send>, answers: ReadonlyArray<JsonResponse>) => {
  for (const answer of answers) {
    if (answer.status !== 202) {
      expect(answer.status, JSON.stringify(answer.body)).toBe(409)
      expect(answer.body.error.code).toBe("input_queue_full")
    }
  }
  const accepted = new Map<string, any>()
  for (const [key, group] of byKey(sends, answers)) {
    const statuses = new Set(group.map((answer) => answer.status))
    expect(statuses.size, `${key}: ${[...statuses]}`).toBe(1)
    if (!statuses.has(202)) continue
    const originals = group.filter((answer) => answer.headers.get("idempotency-replayed") === "false")
    expect(originals, key).toHaveLength(1)
    const original = originals[0]!
    for (const answer of group) {
      if (answer === original) continue
      expect(answer.headers.get("idempotency-replayed"), key).toBe("true")
      expect(answer.text, key).toBe(original.text)
    }
    accepted.set(key, original.body.input)
  }
  return accepted
}

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  agent = await connectAgent(server, await signedIn(server, ownerCredentials), "racer")
  const made = await call("POST", "/workspaces", { workspace: { name: "races" } }, { "idempotency-key": "races" })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("50 concurrent input creates on one conversation", () => {
  it("all scheduled: exactly 16 rows, positions 0–15 in commit order, a raced key answers one row", async () => {
    const id = await createConversation("scheduled")
    // 10 keys sent three times each and 20 keys sent once, interleaved: 50 creates, 30 keys.
    const tripled = Array.from({ length: 10 }, (_, index) => `triple-${index}`)
    const single = Array.from({ length: 20 }, (_, index) => `single-${index}`)
    const keys = [...tripled, ...single, ...tripled, ...tripled]
    const sends = keys.map((key) => ({ key, input: { kind: "message", text: `from ${key}`, deliver_in: "1h" } }))
    expect(sends).toHaveLength(50)
    const answers = await race(id, sends)

    const accepted = judgeKeys(sends, answers)
    expect(accepted.size).toBe(16)
    const ids = [...accepted.values()].map((input) => input.public_id as string)
    expect(new Set(ids).size).toBe(16)
    for (const [key, input] of accepted) {
      expect(input).toMatchObject({ text: `from ${key}`, state: "pending", kind: "message" })
    }

    // The database holds the 16 rows and no other; the door agrees.
    const rows = await storedInputs(id)
    expect(rows.map((row) => row.public_id).sort()).toEqual([...ids].sort())
    expect(rows.map((row) => row.queue_position)).toEqual(Array.from({ length: 16 }, (_, index) => index))
    expect(rows.every((row) => row.state === "pending")).toBe(true)
    const queue = await call("GET", conversationPath(id, "/inputs"))
    expect(queue.body.input_queue).toEqual({ limit: 16, held: 16 })
    expect(queue.body.inputs.map((row: any) => [row.public_id, row.queue_position])).toEqual(
      rows.map((row) => [row.public_id, row.queue_position])
    )

    // Commit order is arrival order: the n-th input_accepted took queue position n, and each 202
    // answered the position its item narrates. Nothing else was narrated.
    const { events, accepted: items } = await acceptedInFeed(id)
    expect(events.map((item) => item.sequence)).toEqual(Array.from({ length: 16 }, (_, index) => index + 1))
    expect(items.map((item) => item.payload.queue_position)).toEqual(Array.from({ length: 16 }, (_, index) => index))
    const positionOf = new Map(
      items.map((item) => [item.payload.input_public_id as string, item.payload.queue_position])
    )
    for (const input of accepted.values()) expect(positionOf.get(input.public_id)).toBe(input.queue_position)

    // Once full, an accepted key still replays its acceptance; a new one is refused and adds nothing.
    const [replayKey, replayed] = [...accepted][0]!
    const again = await call(
      "POST",
      conversationPath(id, "/inputs"),
      { input: { kind: "message", text: `from ${replayKey}`, deliver_in: "1h" } },
      { "idempotency-key": replayKey }
    )
    expect(again.status).toBe(202)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body.input.public_id).toBe(replayed.public_id)
    const refused = await call(
      "POST",
      conversationPath(id, "/inputs"),
      { input: { kind: "message", text: "one more", deliver_in: "1h" } },
      { "idempotency-key": "one-more" }
    )
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe("input_queue_full")
    expect(await storedInputs(id)).toHaveLength(16)
  })

  it("due messages among scheduled rows: the bound counts only what stays queued, positions follow commit order", async () => {
    const id = await createConversation("mixed")
    // 24 scheduled rows (16 of them fit) and 26 due messages, which drain into turns as they are
    // accepted and so hold nothing, until the scheduled rows fill the queue.
    const sends = Array.from({ length: 50 }, (_, index) =>
      index % 2 === 0 && index < 48
        ? { key: `later-${index}`, input: { kind: "message", text: `later ${index}`, deliver_in: "1h" } }
        : { key: `now-${index}`, input: { kind: "message", text: `now ${index}` } }
    )
    const answers = await race(id, sends)
    const accepted = judgeKeys(sends, answers)
    const scheduled = [...accepted.values()].filter((input) => input.deliver_at !== null)
    const due = [...accepted.values()].filter((input) => input.deliver_at === null)
    expect(scheduled).toHaveLength(16)

    // Each acceptance committed with what it held: walking the feed, the queue never held more
    // than 16, and a due message was consumed in the step that accepted it (its turn right after).
    const { events, accepted: items } = await acceptedInFeed(id)
    expect(events.map((item) => item.sequence)).toEqual(Array.from({ length: events.length }, (_, index) => index + 1))
    expect(items.map((item) => item.payload.queue_position)).toEqual(
      Array.from({ length: accepted.size }, (_, index) => index)
    )
    let held = 0
    const turnOrder: Array<string> = []
    for (const [index, item] of events.entries()) {
      if (item.type !== "input_accepted") continue
      if (item.payload.deliver_at !== null) {
        held += 1
        expect(held).toBeLessThanOrEqual(16)
        continue
      }
      expect(events[index + 1]).toMatchObject({ type: "turn_created" })
      expect(events[index + 2]).toMatchObject({
        type: "input_materialized",
        payload: { input_public_id: item.payload.input_public_id }
      })
      turnOrder.push(item.payload.input_public_id)
    }
    expect(held).toBe(16)
    // A due message refused came once the 16 scheduled rows were all held.
    const refusedDue = sends.filter((send, index) => send.key.startsWith("now-") && answers[index]!.status === 409)
    if (refusedDue.length > 0) expect(items.at(-1)!.payload.deliver_at).not.toBeNull()

    // The drained messages became turns 1, 2, 3… in the order they were accepted.
    const turns = await call("GET", conversationPath(id, "/turns?limit=100"))
    expect(turns.body.turns.map((turn: any) => turn.input_public_id)).toEqual(turnOrder)
    expect(turns.body.turns.map((turn: any) => turn.position)).toEqual(turnOrder.map((_, index) => index + 1))
    expect(new Set(turnOrder)).toEqual(new Set(due.map((input) => input.public_id)))

    const rows = await storedInputs(id)
    expect(rows).toHaveLength(accepted.size)
    expect(
      rows
        .filter((row) => row.state === "pending")
        .map((row) => row.public_id)
        .sort()
    ).toEqual(scheduled.map((input) => input.public_id).sort())
    expect(rows.filter((row) => row.state === "consumed").map((row) => row.turn_public_id)).toEqual(
      turns.body.turns.map((turn: any) => turn.public_id)
    )
    const queue = await call("GET", conversationPath(id, "/inputs"))
    expect(queue.body.input_queue).toEqual({ limit: 16, held: 16 })
  })
})

describe("an acceptance whose receipt its process never completed", () => {
  // A process killed after the acceptance's actor step committed but before the Idempotency-Key
  // receipt was completed (a separate statement, after the handler answered) leaves the row and a
  // pending receipt of a lifetime that is over. The test makes that state from a real acceptance
  // (its receipt put back to pending, claimed by a lifetime that never lived) and retries as a
  // client whose answer was lost would: the retry takes the receipt over and runs the create again,
  // which finds the row its key already made (the accepting step kept the key on it).
  it("the retry answers the committed acceptance and makes no second row", async () => {
    const id = await createConversation("lost-receipt")
    const body = { input: { kind: "message", text: "said once" } }
    const first = await call("POST", conversationPath(id, "/inputs"), body, { "idempotency-key": "lost" })
    expect(first.status).toBe(202)
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql`
          UPDATE idempotency_receipts SET state = 'pending', lifetime_id = -1, response_status = NULL,
            response_headers = NULL, response_body = NULL
          WHERE key = 'lost' AND route LIKE ${`%/conversations/${id}/inputs`}`
      )
    )
    const retried = await call("POST", conversationPath(id, "/inputs"), body, { "idempotency-key": "lost" })
    expect(retried.status).toBe(202)
    expect(await storedInputs(id)).toHaveLength(1)
    expect(retried.body.input.public_id).toBe(first.body.input.public_id)
  })
})
