// Budgets at work, through the real server on the local provider: settlement of a known usage
// exact to the last digit (local/echo "hello there": 7 input and 3 output tokens at 1.00 and 2.00
// per million: 0.000013), overdraw by settlement, admission refusing exhausted payers (inference
// create 422, a conversation input blocked, a run's model task failed), and revocation leaving
// admission and settlement.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { budgetsOf, budgetWrite, configureUnit, openBudget } from "../../support/budgets.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { apiToken } from "../../support/people.ts"
import { waitForRun } from "../../support/runs.ts"
import { executionsOf } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
let owner: string
let workspaceId: string
let keys = 0

const call = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1/workspaces/${workspaceId}${path}`, {
    headers: { ...bearer(agent.token), "idempotency-key": `admission-${++keys}` },
    ...(body === undefined ? {} : { body })
  })

const ask = (model: string, input: string) =>
  call("POST", "/inference_requests", { inference_request: { workload: "text_generation", model: { model }, input } })

const finished = async (id: string) => {
  await waitForActorState(server, "inferenceRequest", id, "completed")
  return (await call("GET", `/inference_requests/${id}`)).body.inference_request
}

const ledger = (budgetPublicId: string) =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ sequence: number; kind: string; amount: string; reason: string; operation_key: string }>`
        SELECT e.sequence, e.kind, e.amount::text AS amount, e.reason, e.operation_key FROM budget_entries e
        JOIN budgets b ON b.id = e.budget_id WHERE b.public_id = ${budgetPublicId} ORDER BY e.sequence`
    )
  )

const totals = async (budgetPublicId: string) => {
  const [row] = await server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ credited: string; debited: string }>`
        SELECT credited_amount::text AS credited, debited_amount::text AS debited FROM budgets
        WHERE public_id = ${budgetPublicId}`
    )
  )
  return row
}

const revoke = (budgetPublicId: string) =>
  budgetWrite(server, owner, "POST", `${budgetsOf(agent.publicId)}/${budgetPublicId}/revocation`)

let exhaustedBudget: string

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["payer"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  owner = await apiToken(server)
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(agent.token), "idempotency-key": "budget-ws" },
    body: { workspace: { name: "budgets" } }
  })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("settlement", () => {
  it("usage shows cost_unit null while the account has none, and settles nothing", async () => {
    const done = await finished((await ask("local/echo", "hello there")).body.inference_request.public_id)
    expect(done.result.usage).toMatchObject({ cost_amount: "0.000013", cost_unit: null, cost_complete: true })
    expect(done.usage_summary).toMatchObject({ cost_amount: "0.000013", cost_unit: null })
    expect((await configureUnit(server, owner, "USD")).status).toBe(200)
  })

  it("debits a priced attempt exactly (usage:<usage_record_public_id>), and may overdraw", async () => {
    const budget = await openBudget(server, owner, agent.publicId, "0.000013000000000001")
    exhaustedBudget = budget.public_id
    const created = await ask("local/echo", "hello there")
    expect(created.body.inference_request.usage_summary).toMatchObject({ cost_amount: "0", cost_unit: "USD" })
    const done = await finished(created.body.inference_request.public_id)
    expect(done.result.usage).toMatchObject({ cost_amount: "0.000013", cost_unit: "USD", cost_complete: true })
    expect(done.usage_summary).toMatchObject({ cost_amount: "0.000013", cost_unit: "USD" })
    expect(await totals(budget.public_id)).toEqual({ credited: "0.000013000000000001", debited: "0.000013" })
    const usageId = done.result.usage.usage_record_public_id as string
    expect((await ledger(budget.public_id)).at(-1)).toEqual({
      sequence: 2,
      kind: "debit",
      amount: "0.000013",
      reason: "usage",
      operation_key: `usage:${usageId}`
    })
    // One part in 10^18 is left: still admitted; its settlement overdraws.
    const second = await finished((await ask("local/echo", "hello there")).body.inference_request.public_id)
    expect(second.status).toBe("completed")
    expect(await totals(budget.public_id)).toEqual({ credited: "0.000013000000000001", debited: "0.000026" })
  })
})

describe("admission refuses an exhausted payer", () => {
  it("inference create is 422 budget_exhausted", async () => {
    const refused = await ask("local/echo", "hello there")
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("budget_exhausted")
  })

  it("a conversation's direct reply input blocks with reason budget_exhausted", async () => {
    const made = await call("POST", "/conversations", { conversation: {} })
    const id = made.body.conversation.public_id as string
    const accepted = await call("POST", `/conversations/${id}/inputs`, {
      input: { kind: "direct_reply", text: "hello", model: { model: "local/echo" } }
    })
    expect(accepted.status).toBe(202)
    const inputs = async () => (await call("GET", `/conversations/${id}/inputs`)).body.inputs as Array<any>
    await waitForConversation(server, id, async () => (await inputs()).some((row) => row.state === "blocked"))
    expect((await inputs()).map((row) => [row.state, row.blocked_reason])).toEqual([["blocked", "budget_exhausted"]])
  })

  it("a run's model task fails budget_exhausted", async () => {
    const created = await call("POST", "/runs", {
      run: { approval_mode: "bypass", steps: [{ model: { prompt: "hello run", model: { model: "local/echo" } } }] }
    })
    const id = created.body.run.public_id as string
    await call("POST", `/runs/${id}/start`)
    const task = async () => (await call("GET", `/runs/${id}/tasks/s1-model-1`)).body.task
    await waitForRun(server, id, async () => (await task()).status === "failed")
    expect(await task()).toMatchObject({ status: "failed", error: { key: "budget_exhausted" } })
  })
})

describe("Budget transitions", () => {
  it("Budget: open --revocation--> revoked: leaves admission and settlement", async () => {
    expect((await revoke(exhaustedBudget)).status).toBe(200)
    // Revoked, the exhausted budget no longer admits: with no usable budget there is no cap.
    const uncapped = await finished((await ask("local/echo", "hello there")).body.inference_request.public_id)
    expect(uncapped.status).toBe("completed")
    expect((await ledger(exhaustedBudget)).length).toBe(3)
    // Work admitted by a budget revoked before it settles debits nothing.
    const budget = await openBudget(server, owner, agent.publicId, "1")
    const slow = await ask("local/script", JSON.stringify({ delay_ms: 300, reply: "late" }))
    const id = slow.body.inference_request.public_id as string
    await waitForActorState(server, "inferenceRequest", id, "live.running")
    expect((await revoke(budget.public_id)).status).toBe(200)
    const done = await finished(id)
    expect(done.result.usage.cost_unit).toBe("USD")
    expect(await totals(budget.public_id)).toEqual({ credited: "1", debited: "0" })
    expect((await ledger(budget.public_id)).map((entry) => entry.kind)).toEqual(["credit"])
  })
})

describe("settlement for every kind of work", () => {
  it("a conversation reply and a run's model task debit the payer's budget, their usage in the account's unit", async () => {
    const budget = await openBudget(server, owner, agent.publicId, "5")
    const made = await call("POST", "/conversations", { conversation: {} })
    const conversation = made.body.conversation.public_id as string
    await call("POST", `/conversations/${conversation}/inputs`, {
      input: { kind: "direct_reply", text: "hello there", model: { model: "local/echo" } }
    })
    const turns = async () => (await call("GET", `/conversations/${conversation}/turns?limit=10`)).body.turns as any[]
    await waitForConversation(server, conversation, async () => (await turns()).at(-1)?.status === "completed")
    const reply = (await turns()).at(-1).active_variant.usage
    expect(reply).toMatchObject({ cost_unit: "USD", cost_complete: true })
    const shown = (await call("GET", `/conversations/${conversation}`)).body.conversation
    expect(shown.usage_summary).toMatchObject({ cost_amount: reply.cost_amount, cost_unit: "USD" })

    const created = await call("POST", "/runs", {
      run: { approval_mode: "bypass", steps: [{ model: { prompt: "hello run", model: { model: "local/echo" } } }] }
    })
    const run = created.body.run.public_id as string
    await call("POST", `/runs/${run}/start`)
    const task = async () => (await call("GET", `/runs/${run}/tasks/s1-model-1`)).body.task
    await waitForRun(server, run, async () => (await task()).status === "completed")
    const round = (await task()).usage
    expect(round).toMatchObject({ cost_unit: "USD", cost_complete: true })

    expect((await ledger(budget.public_id)).slice(1)).toEqual([
      expect.objectContaining({
        kind: "debit",
        reason: "usage",
        operation_key: `usage:${reply.usage_record_public_id}`
      }),
      expect.objectContaining({
        kind: "debit",
        reason: "usage",
        operation_key: `usage:${round.usage_record_public_id}`
      })
    ])
  })

  it("a schedule's child is paid by the schedule's creator", async () => {
    const [budget] = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ public_id: string }>`
          SELECT b.public_id FROM budgets b JOIN users u ON u.id = b.user_id
          WHERE u.public_id = ${agent.publicId} AND b.revoked_at IS NULL`
      )
    )
    const before = (await ledger(budget!.public_id)).length
    const made = await call("POST", "/conversations", { conversation: {} })
    const parent = made.body.conversation.public_id as string
    const schedule = await call("POST", `/conversations/${parent}/schedules`, {
      schedule: {
        prompt: "Ping",
        rule: { kind: "once", run_at: new Date(Date.now() + 3_600_000).toISOString() },
        model: { model: "local/echo" }
      }
    })
    expect(schedule.status).toBe(201)
    const id = schedule.body.schedule.public_id as string
    expect((await call("POST", `/conversations/${parent}/schedules/${id}/run`)).status).toBe(200)
    await waitForSteps(server, async () => (await executionsOf(server, id))[0]?.turn_status === "completed")
    const written = (await ledger(budget!.public_id)).slice(before)
    expect(written.map((entry) => [entry.kind, entry.reason])).toContainEqual(["debit", "usage"])
  })

  it("a run-backed reply (a hosted answerer) is paid by the input's author, not the answerer", async () => {
    const [budget] = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ public_id: string }>`
          SELECT b.public_id FROM budgets b JOIN users u ON u.id = b.user_id
          WHERE u.public_id = ${agent.publicId} AND b.revoked_at IS NULL`
      )
    )
    const before = (await ledger(budget!.public_id)).length
    const named = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/agents/hosted-answerer", {
      headers: bearer(agent.token),
      body: {
        scope: "instance",
        description: "Answers through a hosted run",
        configuration: { approval_mode: "bypass", default_model: "local/echo", kernel_tools: ["svc.human.ask"] }
      }
    })
    expect([200, 201]).toContain(named.status)
    const made = await call("POST", "/conversations", { conversation: {} })
    const conversation = made.body.conversation.public_id as string
    const accepted = await call("POST", `/conversations/${conversation}/inputs`, {
      input: { kind: "direct_reply", text: "hello hosted", answering_user_public_id: named.body.agent.public_id }
    })
    expect(accepted.status).toBe(202)
    const turns = async () => (await call("GET", `/conversations/${conversation}/turns?limit=10`)).body.turns as any[]
    await waitForConversation(server, conversation, async () => (await turns()).at(-1)?.status === "completed")
    const written = (await ledger(budget!.public_id)).slice(before)
    expect(written.map((entry) => [entry.kind, entry.reason])).toEqual([["debit", "usage"]])
  })
})
