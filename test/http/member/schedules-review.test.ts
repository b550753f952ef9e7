// Member: schedules, the supplement's rules checked one by one (supplement "Schedules"; its own
// server: the clock moves minutes): Idempotency-Key bounds, rule bounds and normalization, edits
// (reasoning-only, fallback_models [] and null as the child's first input carries them), a
// one-time schedule's clock (completed, then resume and verbs refused), a skipped occurrence while
// an execution is unfinished, the executions' pages, and create on an archived conversation.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { moveClockTo, scheduleRowOf, serverNow } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent
let workspaceId: string
let conversationId: string
let keys = 0

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })

const schedules = (conversation = conversationId) =>
  `/workspaces/${workspaceId}/conversations/${conversation}/schedules`

const create = (schedule: Record<string, unknown>, key = `review-${++keys}`, conversation = conversationId) =>
  call("POST", schedules(conversation), { schedule }, { "idempotency-key": key })

const later = async (millis: number) => new Date((await serverNow(server)) + millis).toISOString()

/** The reply plan the child's first input was accepted with (its conversation's journal). */
const firstInputPlan = async (child: string) => {
  await waitForSteps(server, async () => (await acceptedInput(child)) !== undefined)
  return acceptedInput(child)
}

const acceptedInput = (child: string) =>
  server.run(
    Effect.flatMap(SqlClient, (sql) =>
      Effect.map(
        sql<{ event: { input: { authorId: string; reply: { fallbackModel: string | null } } } }>`
          SELECT event FROM actor_journal
          WHERE kind = 'conversation' AND actor_id = ${child}::uuid AND event_type = 'input.accept'
          ORDER BY id LIMIT 1`,
        (rows) => rows[0]?.event.input
      )
    )
  )

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["review-agent", "review-other"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  other = account.ownerAgents[1] as ConnectedAgent
  const made = await call("POST", "/workspaces", { workspace: { name: "review" } }, { "idempotency-key": "ws-rev" })
  workspaceId = made.body.workspace.public_id
  const conversation = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations`,
    { conversation: { title: "Reviewed" } },
    { "idempotency-key": "conv-rev" }
  )
  conversationId = conversation.body.conversation.public_id
})
afterAll(() => server?.close())

describe("Schedule create bounds", () => {
  it("takes an Idempotency-Key of 1 to 255 bytes; blank or longer is 400", async () => {
    const schedule = { prompt: "K", rule: { kind: "interval", every_seconds: 600 } }
    expect((await create(schedule, "k".repeat(255))).status).toBe(201)
    const long = await create(schedule, "k".repeat(256))
    expect(long.status).toBe(400)
    expect(long.body.error.code).toBe("parameter_invalid")
    const blank = await create(schedule, " ")
    expect(blank.status).toBe(400)
    expect(blank.body.error.code).toBe("idempotency_key_required")
  })

  it("judges each rule member to its bound, naming it; normalizes instants to UTC Z", async () => {
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ kind: "interval", every_seconds: 31_536_001 }, "rule.every_seconds"],
      [{ kind: "interval", every_seconds: "600" }, "rule.every_seconds"],
      [{ kind: "interval", every_seconds: 600, starts_at: "2030-01-01T00:00:00" }, "rule.starts_at"],
      [{ kind: "interval", every_seconds: 600, starts_at: "2099-01-01T00:00:00Z" }, "rule.starts_at"],
      [{ kind: "daily", local_time: "24:00", time_zone: "UTC" }, "rule.local_time"],
      [{ kind: "daily", local_time: "07:60", time_zone: "UTC" }, "rule.local_time"],
      [{ kind: "daily", local_time: "07:5", time_zone: "UTC" }, "rule.local_time"],
      [{ kind: "daily", local_time: "07:00", time_zone: "+09:00" }, "rule.time_zone"],
      [{ kind: "daily", local_time: "07:00" }, "rule.time_zone"],
      [{ kind: "once" }, "rule.run_at"]
    ]
    for (const [rule, field] of refused) {
      const answer = await create({ prompt: "B", rule })
      expect({ rule, status: answer.status, code: answer.body.error?.code }).toEqual({
        rule,
        status: 422,
        code: "validation_failed"
      })
      expect(answer.body.error.message).toContain(field)
    }
    const widest = await create({ prompt: "B", rule: { kind: "interval", every_seconds: 31_536_000 } })
    expect(widest.status).toBe(201)
    const starts = await create({
      prompt: "B",
      rule: { kind: "interval", every_seconds: 600, starts_at: "2030-06-01T12:00:00+02:00" }
    })
    expect(starts.body.schedule).toMatchObject({
      rule: { kind: "interval", every_seconds: 600, starts_at: "2030-06-01T10:00:00.000Z" },
      next_run_at: "2030-06-01T10:00:00.000Z"
    })
  })

  it("refuses a create on an archived conversation (409 conversation_archived)", async () => {
    const made = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Archived" } },
      { "idempotency-key": "conv-archived" }
    )
    const archivedId = made.body.conversation.public_id
    expect((await call("POST", `/workspaces/${workspaceId}/conversations/${archivedId}/archive`)).status).toBe(200)
    const answer = await create({ prompt: "A", rule: { kind: "interval", every_seconds: 600 } }, "archived", archivedId)
    expect(answer.status).toBe(409)
    expect(answer.body.error.code).toBe("conversation_archived")
  })
})

describe("Schedule edits", () => {
  it("an edit with only reasoning controls preserves the intent (no model chosen stays none)", async () => {
    const made = await create({ prompt: "R", rule: { kind: "interval", every_seconds: 600 } })
    const edited = await call("PATCH", `${schedules()}/${made.body.schedule.public_id}`, {
      schedule: { model: { reasoning_enabled: true, reasoning_effort: "high" }, expected_lock_version: 0 }
    })
    expect(edited.status).toBe(200)
    expect(edited.body.schedule.model).toEqual({ reasoning_enabled: true, reasoning_effort: "high" })
    expect(edited.body.schedule.lock_version).toBe(1)
  })

  it("fallback_models [] disables the fallback of the child's first input; null takes the default list again", async () => {
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql`UPDATE users SET configuration = ${JSON.stringify({ fallback_models: ["local/echo"] })}::jsonb
                     WHERE public_id = ${other.publicId}`
      )
    )
    const made = await create({
      prompt: "F",
      rule: { kind: "interval", every_seconds: 600 },
      answering_user_public_id: other.publicId,
      model: { model: "local/echo" },
      fallback_models: []
    })
    const one = `${schedules()}/${made.body.schedule.public_id}`
    const ran = await call("POST", `${one}/run`)
    expect(ran.status).toBe(200)
    const first = await firstInputPlan(ran.body.schedule.last_execution.child_conversation_public_id)
    expect(first?.reply.fallbackModel).toBeNull()
    expect(first?.authorId).toBe(agent.publicId)
    await waitForSteps(server, async () => (await call("GET", one)).body.schedule.last_execution.status === "completed")
    const current = (await call("GET", one)).body.schedule
    const restored = await call("PATCH", one, {
      schedule: { fallback_models: null, expected_lock_version: current.lock_version }
    })
    expect(restored.body.schedule.fallback_models).toBeNull()
    await waitForSteps(server, async () => (await call("POST", `${one}/run`)).status === 200)
    const again = (await call("GET", one)).body.schedule
    const second = await firstInputPlan(again.last_execution.child_conversation_public_id)
    expect(second?.reply.fallbackModel).toBe("local/echo")
  })
})

describe("Schedule workspace list", () => {
  it("pages across readable conversations only: a page with next_after is full, hidden rows never shown", async () => {
    const hidden = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Hidden", access: { default: "none" } } },
      { "idempotency-key": "conv-hidden-review" }
    )
    const hiddenId = hidden.body.conversation.public_id
    const secret: Array<string> = []
    for (const n of [1, 2]) {
      const made = await create(
        { prompt: "S", rule: { kind: "interval", every_seconds: 600 } },
        `hidden-${n}`,
        hiddenId
      )
      secret.push(made.body.schedule.public_id)
    }
    await create({ prompt: "V", rule: { kind: "interval", every_seconds: 600 } })
    const seen: Array<string> = []
    let after = ""
    for (;;) {
      const page = await request(
        server.baseUrl,
        "GET",
        `/agent_api/v1/workspaces/${workspaceId}/schedules?limit=1${after === "" ? "" : `&after=${after}`}`,
        { headers: bearer(other.token) }
      )
      expect(page.status).toBe(200)
      seen.push(...page.body.schedules.map((each: { public_id: string }) => each.public_id))
      if (page.body.pagination.next_after === null) break
      expect(page.body.schedules).toHaveLength(1)
      after = page.body.pagination.next_after
    }
    const all = await call("GET", `/workspaces/${workspaceId}/schedules?limit=100`)
    const visible = all.body.schedules
      .map((each: { public_id: string }) => each.public_id)
      .filter((id: string) => !secret.includes(id))
    expect(seen).toEqual(visible)
  })
})

describe("Schedule executions", () => {
  it("pages the executions oldest first: next_after while full, last_cursor the last row's", async () => {
    const made = await create({
      prompt: "Page",
      rule: { kind: "interval", every_seconds: 600 },
      model: { model: "local/echo" }
    })
    const one = `${schedules()}/${made.body.schedule.public_id}`
    const children: Array<string> = []
    for (let n = 0; n < 2; n++) {
      await waitForSteps(server, async () => {
        const ran = await call("POST", `${one}/run`)
        if (ran.status === 200) children.push(ran.body.schedule.last_execution.child_conversation_public_id)
        return ran.status === 200
      })
    }
    const first = await call("GET", `${one}/executions?limit=1`)
    expect(
      first.body.executions.map((row: { child_conversation_public_id: string }) => row.child_conversation_public_id)
    ).toEqual([children[0]])
    expect(first.body.pagination.next_after).toBe(first.body.pagination.last_cursor)
    const second = await call("GET", `${one}/executions?limit=1&after=${first.body.pagination.next_after}`)
    expect(second.body.executions[0].child_conversation_public_id).toBe(children[1])
    expect((await call("GET", `${one}/executions?after=nonsense`)).body.error.code).toBe("parameter_invalid")
  })
})

describe("Schedule clocks and finished schedules", () => {
  it("a one-time schedule completes; resume of an expired paused one is 422 naming rule.run_at; verbs on completed 422", async () => {
    const runAt = await later(120_000)
    const completing = await create({
      prompt: "Once",
      rule: { kind: "once", run_at: runAt },
      model: { model: "local/echo" }
    })
    const expiring = await create({ prompt: "Paused", rule: { kind: "once", run_at: runAt } })
    const completingId = completing.body.schedule.public_id
    const expiringId = expiring.body.schedule.public_id
    const paused = await call("POST", `${schedules()}/${expiringId}/pause`)
    expect(paused.body.schedule).toMatchObject({ status: "paused", next_run_at: null, lock_version: 1 })
    await moveClockTo(server, Date.parse(runAt) + 1_000)
    await waitForSteps(server, async () => (await scheduleRowOf(server, completingId)).status === "completed")
    const completed = (await call("GET", `${schedules()}/${completingId}`)).body.schedule
    expect(completed).toMatchObject({ status: "completed", next_run_at: null, lock_version: 1 })
    expect(completed.last_execution.scheduled_for).toBe(new Date(runAt).toISOString())
    const resumed = await call("POST", `${schedules()}/${expiringId}/resume`)
    expect(resumed.status).toBe(422)
    expect(resumed.body.error.code).toBe("validation_failed")
    expect(resumed.body.error.message).toContain("rule.run_at")
    expect((await call("GET", `${schedules()}/${expiringId}`)).body.schedule.lock_version).toBe(1)
    for (const verb of ["pause", "resume", "cancel", "run"]) {
      const refused = await call("POST", `${schedules()}/${completingId}/${verb}`)
      expect({ verb, status: refused.status, code: refused.body.error?.code }).toEqual({
        verb,
        status: 422,
        code: "schedule_finished"
      })
    }
  })

  it("an occurrence while an execution is unfinished is skipped with execution_in_progress; the clock moves on", async () => {
    // No model: the child's first input blocks (unknown_model), so its execution stays queued.
    const made = await create({ prompt: "Busy", rule: { kind: "interval", every_seconds: 60 } })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    expect(ran.body.schedule.last_execution.status).toBe("queued")
    const next = Date.parse(ran.body.schedule.next_run_at)
    await moveClockTo(server, next + 1_000)
    await waitForSteps(
      server,
      async () => (await scheduleRowOf(server, id)).last_error_code === "execution_in_progress"
    )
    const skipped = (await call("GET", `${schedules()}/${id}`)).body.schedule
    expect(skipped).toMatchObject({
      status: "active",
      lock_version: 2,
      next_run_at: new Date(next + 60_000).toISOString()
    })
    expect(skipped.last_execution.input_public_id).toBe(ran.body.schedule.last_execution.input_public_id)
    const listed = await call("GET", `${schedules()}/${id}/executions`)
    expect(listed.body.executions).toHaveLength(1)
  })
})
