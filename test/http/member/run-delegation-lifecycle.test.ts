// A hosted run whose reply settled early (delegate_task, lifetime conversation) against its
// conversation's lifecycle, over HTTP against the database: DELETE of the conversation is refused
// while the run works (live work in its tree), and goes once the run is stopped, nothing returned;
// while the conversation is archived the delegated result is recorded as a message turn (no reply
// started, it stays archived).
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState, waitForMessages } from "../../support/actors.ts"
import { type HostingWorld, hostedReply, hostingWorld, type WorkspaceCall } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let delegator: string
let member: WorkspaceCall
let turnsOf: HostingWorld["turnsOf"]
let opened: HostingWorld["createConversation"]
let ownerToken: string

/** The delegated task of the first call of a round whose model delegates at once. */
const delegatedKey = "s1-model-1-t0-model-1"
/** A local/script directive: answer `reply` after `delay_ms`. */
const directive = (reply: string, delayMs: number) => JSON.stringify({ reply, delay_ms: delayMs })

const until = (done: () => Promise<boolean>) => waitForSteps(server, done, { timeout: "30 seconds" })

/**
 * A conversation whose reply delegates a task that works a minute (lifetime conversation, `wake`):
 * once its reply settled early, its id, the run and the reply's turn.
 */
const settledEarly = async (title: string, wake: "auto" | "passive") => settledEarlyIn(await opened({ title }), wake)

/** As settledEarly, in the conversation `host`. */
const settledEarlyIn = async (host: string, wake: "auto" | "passive") => {
  const delegation = { prompt: directive("never", 60_000), wake }
  const { runId, turnId } = await hostedReply(
    server,
    member,
    host,
    delegator,
    JSON.stringify({ tool_calls: [{ name: "delegate_task", input: delegation }] })
  )
  await until(async () => (await turnsOf(host)).find((turn) => turn.public_id === turnId)?.status === "completed")
  return { host, runId, turnId }
}

/** The run's status and its delegated task's, as their rows read. */
const runRows = (runId: string) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const [run] = yield* sql<{ status: string }>`SELECT status FROM runs WHERE public_id = ${runId}::uuid`
      const [task] = yield* sql<{ status: string }>`
        SELECT t.status FROM run_tasks t JOIN runs r ON r.id = t.run_id
        WHERE r.public_id = ${runId}::uuid AND t.key = ${delegatedKey}`
      return { run: run?.status, task: task?.status }
    })
  )

/** Messages told to the conversation carrying a returned result (task_result input). */
const resultsTold = (conversation: string) =>
  server.run(
    Effect.gen(function* () {
      const sql = yield* SqlClient
      return yield* sql<{ state: string }>`
        SELECT state FROM actor_messages
        WHERE to_kind = 'conversation' AND to_actor_id = ${conversation}
          AND event->>'type' = 'input.accept' AND event->'input'->'row'->>'origin' = 'task_result'`
    })
  )

beforeAll(async () => {
  server = await startTestServer()
  const world = await hostingWorld(server, {
    agents: ["lifecycle-agent"],
    workspace: "delegation-lifecycle",
    answerer: "lifecycle-delegator",
    description: "Delegates work and settles first",
    kernelTools: ["svc.graph.delegate_task"]
  })
  delegator = world.answererId
  ownerToken = world.agents[0]!.token
  ;({ member, turnsOf, createConversation: opened } = world)
})
afterAll(() => server?.close())

describe("a hosted run working on after its reply settled early", () => {
  it("DELETE of its conversation is refused conversation_busy (live work in its tree); stopped, the run returns nothing and DELETE goes", async () => {
    const { host, runId } = await settledEarly("deleted host", "auto")
    expect(await runRows(runId)).toEqual({ run: "running", task: "running" })
    const refused = await member("DELETE", `/conversations/${host}`)
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe("conversation_busy")
    expect((await member("GET", `/conversations/${host}`)).status).toBe(200)
    expect((await member("POST", `/runs/${runId}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", runId, "canceled")
    expect(await runRows(runId)).toEqual({ run: "canceled", task: "canceled" })
    expect((await member("DELETE", `/conversations/${host}`)).status).toBe(204)
    await waitForMessages(server, "conversation", host)
    expect(await resultsTold(host)).toEqual([])
  })

  it("a side's live hosted run holds its source's DELETE too (its tree)", async () => {
    const { host, runId: first, turnId } = await settledEarly("source of a working side", "auto")
    expect((await member("POST", `/runs/${first}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", first, "canceled")
    const side = await member("POST", `/conversations/${host}/forks`, { fork: { side: true, turn_public_id: turnId } })
    expect(side.status).toBe(201)
    const { runId } = await settledEarlyIn(side.body.conversation.public_id, "auto")
    const refused = await member("DELETE", `/conversations/${host}`)
    expect(refused.status).toBe(409)
    expect(refused.body.error.code).toBe("conversation_busy")
    expect((await member("POST", `/runs/${runId}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", runId, "canceled")
    expect((await member("DELETE", `/conversations/${host}`)).status).toBe(204)
  })

  it("archive of its source ends a side (work canceled): the side's run working on is stopped by force", async () => {
    const { host, runId: first, turnId } = await settledEarly("archived source of a working side", "auto")
    expect((await member("POST", `/runs/${first}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", first, "canceled")
    const side = await member("POST", `/conversations/${host}/forks`, { fork: { side: true, turn_public_id: turnId } })
    expect(side.status).toBe(201)
    const sideId = side.body.conversation.public_id
    const { runId } = await settledEarlyIn(sideId, "auto")
    expect((await member("POST", `/conversations/${host}/archive`)).status).toBe(200)
    await waitForActorState(server, "run", runId, "canceled")
    expect(await runRows(runId)).toEqual({ run: "canceled", task: "canceled" })
    expect((await member("GET", `/conversations/${sideId}`)).status).toBe(404)
    await waitForMessages(server, "conversation", sideId)
    expect(await resultsTold(sideId)).toEqual([])
  })

  it("archived, its delegated result arrives: a task_result message turn, no reply started, still archived; unarchive starts nothing", async () => {
    const { host, runId } = await settledEarly("archived host", "auto")
    expect((await member("POST", `/conversations/${host}/archive`)).status).toBe(200)
    // The delegated task settles (canceled by its task verb): its result returns to the archived host.
    expect((await member("POST", `/runs/${runId}/tasks/${delegatedKey}/cancel`, {})).status).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    await waitForMessages(server, "conversation", host)
    expect(await resultsTold(host)).toEqual([{ state: "delivered" }])
    const turns = await turnsOf(host)
    const results = turns.filter((turn) => turn.origin === "task_result")
    expect(results).toHaveLength(1)
    expect(results[0]).toMatchObject({ kind: "message", status: "completed", sender_task_key: delegatedKey })
    expect(results[0].content).toContain("The delegated task canceled")
    expect(turns.at(-1).public_id).toBe(results[0].public_id)
    expect(turns.every((turn) => turn.status !== "running")).toBe(true)
    const read = (await member("GET", `/conversations/${host}`)).body.conversation
    expect(read.archived_at).not.toBeNull()
    const unarchived = await member("POST", `/conversations/${host}/unarchive`)
    expect(unarchived.status).toBe(200)
    expect(unarchived.body.conversation.archived_at).toBeNull()
    // Nothing was left queued: no reply starts on unarchive.
    expect((await member("GET", `/conversations/${host}/inputs`)).body.inputs).toEqual([])
    expect((await turnsOf(host)).at(-1).public_id).toBe(results[0].public_id)
  })

  it("a hosted run held for attention (its turn failed) does not hold DELETE back: it is stopped by force", async () => {
    const asker = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/agents/lifecycle-asker", {
      headers: bearer(ownerToken),
      body: {
        scope: "instance",
        description: "Asks before answering",
        configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.human.ask"] }
      }
    })
    expect([200, 201]).toContain(asker.status)
    const host = await opened({ title: "held host" })
    const ask = JSON.stringify({ tool_calls: [{ name: "ask", input: { prompt: "Proceed?" } }] })
    const { runId, turnId } = await hostedReply(server, member, host, asker.body.agent.public_id, ask)
    await waitForActorState(server, "run", runId, "needs_attention")
    await until(async () => (await turnsOf(host)).find((turn) => turn.public_id === turnId)?.status === "failed")
    expect((await member("DELETE", `/conversations/${host}`)).status).toBe(204)
    await waitForActorState(server, "run", runId, "canceled")
  })
})
