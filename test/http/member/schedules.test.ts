// Member: schedules over HTTP (spec "Member: schedules", "Schedule"; supplement "Schedules"):
// create and its refusals, replay, lists and read, run now with its execution (a child
// conversation whose reply returns to the parent as a task_result input), the verbs and their
// repeats, PATCH with expected_lock_version, and a finished schedule's refusals.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { executionsOf } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent
let humanToken: string
let workspaceId: string
let conversationId: string
let keys = 0

const call = (
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  token = agent.token
) => request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

const schedules = (conversation = conversationId) =>
  `/workspaces/${workspaceId}/conversations/${conversation}/schedules`

const create = (schedule: Record<string, unknown>, key = `schedule-${++keys}`, conversation = conversationId) =>
  call("POST", schedules(conversation), { schedule }, { "idempotency-key": key })

const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString()
/** The year after this one: its 1 January is ahead, and within 10 years, whenever the test runs. */
const nextYear = () => new Date().getUTCFullYear() + 1
const echo = { model: { model: "local/echo" } }

const parentTurns = () =>
  server.run(
    Effect.flatMap(
      SqlClient,
      (sql) => sql<{ kind: string; origin: string; prompt: string }>`
        SELECT t.kind, t.origin, v.content AS prompt FROM conversation_turns t
        JOIN conversations c ON c.id = t.conversation_id
        JOIN conversation_variants v ON v.public_id = t.active_variant_public_id
        WHERE c.public_id = ${conversationId} ORDER BY t.position`
    )
  )

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["schedule-agent", "schedule-other"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  other = account.ownerAgents[1] as ConnectedAgent
  humanToken = account.ownerToken
  // The steward's workspace: one an agent made would be dedicated to it, fencing out its sibling as answerer.
  const made = await call(
    "POST",
    "/workspaces",
    { workspace: { name: "schedules" } },
    { "idempotency-key": "ws-sch" },
    humanToken
  )
  workspaceId = made.body.workspace.public_id
  const conversation = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations`,
    { conversation: { title: "Scheduled" } },
    { "idempotency-key": "conv-sch" }
  )
  conversationId = conversation.body.conversation.public_id
})
afterAll(() => server?.close())

describe("Schedule create", () => {
  it("answers 201 with the normalized rule (UTC Z) and replays a repeat verbatim", async () => {
    const year = nextYear()
    const body = {
      name: "Hourly digest",
      prompt: "Summarize",
      rule: { kind: "once", run_at: `${year}-01-01T10:00:00+02:00` },
      ...echo
    }
    const first = await create(body, "replayed")
    expect(first.status).toBe(201)
    expect(first.headers.get("idempotency-replayed")).toBe("false")
    const schedule = first.body.schedule
    expect(schedule).toMatchObject({
      workspace_public_id: workspaceId,
      conversation_public_id: conversationId,
      conversation_title: "Scheduled",
      creating_user_public_id: agent.publicId,
      name: "Hourly digest",
      status: "active",
      rule: { kind: "once", run_at: `${year}-01-01T08:00:00.000Z` },
      next_run_at: `${year}-01-01T08:00:00.000Z`,
      last_execution: null,
      lock_version: 0,
      model: { model: "local/echo" }
    })
    const again = await create(body, "replayed")
    expect(again.status).toBe(201)
    expect(again.headers.get("idempotency-replayed")).toBe("true")
    expect(again.body).toEqual(first.body)
    const mismatch = await create({ ...body, name: "Other" }, "replayed")
    expect(mismatch.status).toBe(409)
    expect(mismatch.body.error.code).toBe("idempotency_envelope_mismatch")
  })

  it("refuses absent, blank and malformed members with the supplement's codes", async () => {
    const cases: Array<[Record<string, unknown>, number, string, string?]> = [
      [{ rule: { kind: "once", run_at: inAnHour() } }, 400, "parameter_missing"],
      [{ prompt: "Hi" }, 400, "parameter_missing"],
      [{ prompt: "  ", rule: { kind: "once", run_at: inAnHour() } }, 422, "validation_failed", "prompt"],
      [
        { prompt: "Hi", name: "x".repeat(256), rule: { kind: "once", run_at: inAnHour() } },
        422,
        "validation_failed",
        "name"
      ],
      [{ prompt: "Hi", rule: { kind: "weekly" } }, 422, "validation_failed", "rule.kind"],
      [{ prompt: "Hi", rule: { kind: "interval", every_seconds: 59 } }, 422, "validation_failed", "rule.every_seconds"],
      [
        { prompt: "Hi", rule: { kind: "interval", every_seconds: 60.5 } },
        422,
        "validation_failed",
        "rule.every_seconds"
      ],
      [
        { prompt: "Hi", rule: { kind: "daily", local_time: "7:00", time_zone: "UTC" } },
        422,
        "validation_failed",
        "rule.local_time"
      ],
      [
        { prompt: "Hi", rule: { kind: "daily", local_time: "07:00", time_zone: "Mars/Olympus" } },
        422,
        "validation_failed",
        "rule.time_zone"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: "2030-01-01T10:00:00" } },
        422,
        "validation_failed",
        "rule.run_at"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: "2001-01-01T10:00:00Z" } },
        422,
        "validation_failed",
        "rule.run_at"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: `${nextYear() + 10}-01-01T10:00:00Z` } },
        422,
        "validation_failed",
        "rule.run_at"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: inAnHour() }, model: { model: "local/nope" } },
        422,
        "validation_failed",
        "model"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: inAnHour() }, source_task_key: "k" },
        422,
        "validation_failed",
        "source_run_public_id"
      ],
      [
        { prompt: "Hi", rule: { kind: "once", run_at: inAnHour() }, answering_user_public_id: "@nobody-here" },
        422,
        "answerer_not_eligible"
      ]
    ]
    for (const [schedule, status, code, named] of cases) {
      const answer = await create(schedule)
      expect({ schedule, status: answer.status, code: answer.body.error?.code }).toEqual({ schedule, status, code })
      if (named !== undefined) expect(answer.body.error.message).toContain(named)
    }
  })

  it("refuses a side conversation (422 side_conversation)", async () => {
    const side = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations/${conversationId}/forks`,
      { fork: { side: true } },
      { "idempotency-key": "side-sch" }
    )
    expect(side.status).toBe(201)
    const answer = await create(
      { prompt: "Hi", rule: { kind: "once", run_at: inAnHour() } },
      "side",
      side.body.conversation.public_id
    )
    expect(answer.status).toBe(422)
    expect(answer.body.error.code).toBe("side_conversation")
  })

  it("takes an eligible agent as answerer, and refuses a human one", async () => {
    const named = await create({
      prompt: "Hi",
      rule: { kind: "interval", every_seconds: 3600, starts_at: "2020-01-01T00:00:00Z" },
      answering_user_public_id: other.publicId
    })
    expect(named.status).toBe(201)
    expect(named.body.schedule.answering_user_public_id).toBe(other.publicId)
    // A past starts_at: the clock takes the next future occurrence on the grid.
    const next = Date.parse(named.body.schedule.next_run_at)
    expect(next).toBeGreaterThan(Date.now() - 5_000)
    expect(next % 3_600_000).toBe(0)
    const human = await call("GET", "/profile", undefined, {}, humanToken)
    const refused = await create({
      prompt: "Hi",
      rule: { kind: "once", run_at: inAnHour() },
      answering_user_public_id: human.body.profile?.public_id ?? human.body.member?.public_id
    })
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("answerer_not_eligible")
  })
})

describe("Schedule lists and read", () => {
  it("lists a conversation's schedules and a workspace's, pages with next_after, reads one", async () => {
    const one = await call("GET", `${schedules()}?limit=1`)
    expect(one.status).toBe(200)
    expect(one.body.schedules).toHaveLength(1)
    const rest = await call("GET", `${schedules()}?limit=100&after=${one.body.pagination.next_after}`)
    expect(rest.body.schedules.map((each: { public_id: string }) => each.public_id)).not.toContain(
      one.body.schedules[0].public_id
    )
    const all = await call("GET", `/workspaces/${workspaceId}/schedules?limit=100`)
    expect(all.body.schedules.length).toBe(1 + rest.body.schedules.length)
    const read = await call("GET", `${schedules()}/${one.body.schedules[0].public_id}`)
    expect(read.body.schedule).toEqual(one.body.schedules[0])
    expect((await call("GET", `${schedules()}?limit=0`)).body.error.code).toBe("parameter_invalid")
    expect((await call("GET", `${schedules()}/${crypto.randomUUID()}`)).status).toBe(404)
  })
})

describe("Schedule standing", () => {
  it("lists across a workspace only the schedules of conversations the caller can read; others are 404", async () => {
    const hidden = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Private", access: { default: "none" } } },
      { "idempotency-key": "conv-hidden" }
    )
    const hiddenId = hidden.body.conversation.public_id
    const made = await create({ prompt: "Secret", rule: { kind: "interval", every_seconds: 600 } }, "hidden", hiddenId)
    expect(made.status).toBe(201)
    const mine = await call("GET", `/workspaces/${workspaceId}/schedules?limit=100`)
    expect(mine.body.schedules.map((each: { public_id: string }) => each.public_id)).toContain(
      made.body.schedule.public_id
    )
    const theirs = await call("GET", `/workspaces/${workspaceId}/schedules?limit=100`, undefined, {}, other.token)
    expect(theirs.status).toBe(200)
    expect(theirs.body.schedules.map((each: { public_id: string }) => each.public_id)).not.toContain(
      made.body.schedule.public_id
    )
    expect(theirs.body.schedules.length).toBeGreaterThan(0)
    const read = await call("GET", `${schedules(hiddenId)}/${made.body.schedule.public_id}`, undefined, {}, other.token)
    expect(read.status).toBe(404)
    const run = await call(
      "POST",
      `${schedules(hiddenId)}/${made.body.schedule.public_id}/run`,
      undefined,
      {},
      other.token
    )
    expect(run.status).toBe(404)
  })
})

describe("Schedule children", () => {
  it("a child inherits its parent's access, the parent's creator kept full when another made the schedule", async () => {
    // The steward (full by access.default) schedules in its agent's conversation, answered by another agent.
    const shared = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { access: { default: "full", entries: [] } } },
      { "idempotency-key": "conv-shared" }
    )
    const sharedId = shared.body.conversation.public_id
    const made = await call(
      "POST",
      schedules(sharedId),
      {
        schedule: {
          prompt: "Theirs",
          rule: { kind: "interval", every_seconds: 600 },
          answering_user_public_id: other.publicId
        }
      },
      { "idempotency-key": "schedule-theirs" },
      humanToken
    )
    expect(made.status).toBe(201)
    const ran = await call(
      "POST",
      `${schedules(sharedId)}/${made.body.schedule.public_id}/run`,
      undefined,
      {},
      humanToken
    )
    const child = ran.body.schedule.last_execution.child_conversation_public_id
    const read = await call("GET", `/workspaces/${workspaceId}/conversations/${child}`)
    expect(read.status).toBe(200)
    expect(read.body.conversation.access).toMatchObject({
      default: "full",
      entries: [{ user_public_id: agent.publicId, level: "full" }]
    })
    expect(read.body.conversation.answering_user_public_id).toBe(other.publicId)
  })
})

describe("Schedule run and executions", () => {
  it("Schedule: active or paused --run, no unfinished execution--> unchanged: one child started now; its reply returns as task_result", async () => {
    const made = await create({ prompt: "Ping", rule: { kind: "once", run_at: inAnHour() }, ...echo })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    expect(ran.status).toBe(200)
    expect(ran.body.schedule).toMatchObject({
      status: "active",
      lock_version: 1,
      next_run_at: made.body.schedule.next_run_at
    })
    const execution = ran.body.schedule.last_execution
    expect(["queued", "running", "completed"]).toContain(execution.status)
    expect(ran.body.schedule.last_input_public_id).toBe(execution.input_public_id)
    await waitForSteps(server, async () => (await executionsOf(server, id))[0]?.turn_status === "completed")
    const child = await call(
      "GET",
      `/workspaces/${workspaceId}/conversations/${execution.child_conversation_public_id}`
    )
    expect(child.body.conversation.parent).toEqual({ public_id: conversationId, spawn_node_key: null, label: null })
    const listed = await call("GET", `${schedules()}/${id}/executions`)
    expect(listed.body.executions).toHaveLength(1)
    expect(listed.body.executions[0]).toMatchObject({
      child_conversation_public_id: execution.child_conversation_public_id,
      input_public_id: execution.input_public_id,
      status: "completed"
    })
    expect(listed.body.executions[0].turn_public_id).toEqual(expect.any(String))
    expect(listed.body.pagination.last_cursor).toEqual(expect.any(String))
    const after = await call("GET", `${schedules()}/${id}/executions?after=${listed.body.pagination.last_cursor}`)
    expect(after.body).toEqual({
      executions: [],
      pagination: { next_after: null, last_cursor: listed.body.pagination.last_cursor }
    })
    await waitForSteps(server, async () => (await parentTurns()).some((turn) => turn.origin === "task_result"))
    const returned = (await parentTurns()).find((turn) => turn.origin === "task_result")!
    expect(returned.kind).toBe("message")
    expect(returned.prompt).toContain("Ping")
    // Paused, the schedule still runs now and stays paused.
    expect((await call("POST", `${schedules()}/${id}/pause`)).body.schedule.status).toBe("paused")
    const again = await call("POST", `${schedules()}/${id}/run`)
    expect(again.status).toBe(200)
    expect(again.body.schedule).toMatchObject({ status: "paused", next_run_at: null })
    expect(again.body.schedule.last_execution.child_conversation_public_id).not.toBe(
      execution.child_conversation_public_id
    )
    expect(await executionsOf(server, id)).toHaveLength(2)
  })

  it("refuses run while an execution is unfinished (409 execution_in_progress)", async () => {
    // No model for the answerer: the child's input blocks (unknown_model) and stays queued.
    const made = await create({ prompt: "Stuck", rule: { kind: "once", run_at: inAnHour() } })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    expect(ran.status).toBe(200)
    const again = await call("POST", `${schedules()}/${id}/run`)
    expect(again.status).toBe(409)
    expect(again.body.error.code).toBe("execution_in_progress")
  })

  it("a child deleted before its first reply ends its execution canceled, so the next run starts", async () => {
    const made = await create({ prompt: "Gone", rule: { kind: "once", run_at: inAnHour() } })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    const child = ran.body.schedule.last_execution.child_conversation_public_id
    const deleted = await call("DELETE", `/workspaces/${workspaceId}/conversations/${child}`)
    expect(deleted.status).toBe(204)
    await waitForSteps(server, async () => {
      const listed = await call("GET", `${schedules()}/${id}/executions`)
      return listed.body.executions[0]?.status === "canceled"
    })
    // The list reads the child's rows; the schedule learns of the end by a message from the child.
    await waitForMessages(server, "schedule", id)
    const next = await call("POST", `${schedules()}/${id}/run`)
    expect(next.status).toBe(200)
    expect(next.body.schedule.last_execution.child_conversation_public_id).not.toBe(child)
  })
})

describe("Schedule verbs", () => {
  it("Schedule: active --pause--> paused: future occurrences only (the execution under way keeps its input); a repeat is 200 unchanged", async () => {
    // No model: the child's first input blocks (unknown_model), so its execution stays queued.
    const made = await create({ prompt: "P", rule: { kind: "interval", every_seconds: 600 } })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    const { child_conversation_public_id: child, input_public_id: input } = ran.body.schedule.last_execution
    const childInputs = async () =>
      (await call("GET", `/workspaces/${workspaceId}/conversations/${child}/inputs`)).body.inputs as Array<any>
    await waitForSteps(server, async () => (await childInputs())[0]?.state === "blocked")
    const paused = await call("POST", `${schedules()}/${id}/pause`)
    expect(paused.body.schedule).toMatchObject({ status: "paused", next_run_at: null, lock_version: 2 })
    const repeat = await call("POST", `${schedules()}/${id}/pause`, {})
    expect(repeat.status).toBe(200)
    expect(repeat.body.schedule.lock_version).toBe(2)
    // Nothing told the child to drop its input (a cancel would have).
    await waitForMessages(server, "conversation", child)
    expect((await childInputs()).map((row) => row.public_id)).toEqual([input])
    const listed = await call("GET", `${schedules()}/${id}/executions`)
    expect(listed.body.executions).toMatchObject([{ input_public_id: input, status: "queued" }])
  })

  it("Schedule: paused --resume, not expired one-time--> active: the next future occurrence", async () => {
    const made = await create({ prompt: "R", rule: { kind: "interval", every_seconds: 600 } })
    const id = made.body.schedule.public_id
    await call("POST", `${schedules()}/${id}/pause`)
    const resumed = await call("POST", `${schedules()}/${id}/resume`)
    expect(resumed.body.schedule).toMatchObject({ status: "active", lock_version: 2 })
    expect(Date.parse(resumed.body.schedule.next_run_at)).toBeGreaterThan(Date.now())
    expect((await call("POST", `${schedules()}/${id}/resume`)).body.schedule.lock_version).toBe(2)
  })

  it("Schedule: active or paused --cancel--> canceled: removes a still-queued last child input", async () => {
    const made = await create({ prompt: "Blocked", rule: { kind: "interval", every_seconds: 600 } })
    const id = made.body.schedule.public_id
    const ran = await call("POST", `${schedules()}/${id}/run`)
    const { child_conversation_public_id: child, input_public_id: input } = ran.body.schedule.last_execution
    const canceled = await call("POST", `${schedules()}/${id}/cancel`)
    expect(canceled.body.schedule).toMatchObject({ status: "canceled", next_run_at: null })
    await waitForSteps(server, async () => {
      const queue = await call("GET", `/workspaces/${workspaceId}/conversations/${child}/inputs`)
      return queue.body.inputs.length === 0
    })
    const listed = await call("GET", `${schedules()}/${id}/executions`)
    expect(listed.body.executions).toMatchObject([{ input_public_id: input, status: "canceled" }])
    const repeat = await call("POST", `${schedules()}/${id}/cancel`)
    expect(repeat.status).toBe(200)
    expect(repeat.body.schedule.lock_version).toBe(canceled.body.schedule.lock_version)
    for (const verb of ["pause", "resume", "run"]) {
      const refused = await call("POST", `${schedules()}/${id}/${verb}`)
      expect({ verb, status: refused.status, code: refused.body.error.code }).toEqual({
        verb,
        status: 422,
        code: "schedule_finished"
      })
    }
    const patched = await call("PATCH", `${schedules()}/${id}`, { schedule: { name: "x", expected_lock_version: 0 } })
    expect(patched.body.error.code).toBe("schedule_finished")
  })
})

describe("Schedule edit", () => {
  it("requires expected_lock_version, fences it, refuses source fields, keeps omitted policy", async () => {
    const made = await create({
      prompt: "E",
      rule: { kind: "interval", every_seconds: 600 },
      model: { model: "local/echo" },
      fallback_models: ["local/echo"],
      tool_names: ["grep"]
    })
    const one = `${schedules()}/${made.body.schedule.public_id}`
    expect((await call("PATCH", one, { schedule: { name: "n" } })).body.error.code).toBe("parameter_missing")
    expect((await call("PATCH", one, { schedule: { name: "n", expected_lock_version: -1 } })).body.error.code).toBe(
      "parameter_invalid"
    )
    const stale = await call("PATCH", one, { schedule: { name: "n", expected_lock_version: 7 } })
    expect(stale.status).toBe(409)
    expect(stale.body.error.code).toBe("stale_object")
    const source = await call("PATCH", one, { schedule: { source_task_key: "k", expected_lock_version: 0 } })
    expect(source.status).toBe(422)
    const edited = await call("PATCH", one, {
      schedule: {
        name: "Renamed",
        fallback_models: [],
        model: { reasoning_enabled: false },
        rule: { kind: "daily", local_time: "07:00", time_zone: "Asia/Tokyo" },
        expected_lock_version: 0
      }
    })
    expect(edited.status).toBe(200)
    expect(edited.body.schedule).toMatchObject({
      name: "Renamed",
      lock_version: 1,
      fallback_models: [],
      tool_names: ["grep"],
      model: { model: "local/echo", reasoning_enabled: false },
      rule: { kind: "daily", local_time: "07:00", time_zone: "Asia/Tokyo" }
    })
    expect(new Date(edited.body.schedule.next_run_at).getUTCHours()).toBe(22)
    const restored = await call("PATCH", one, { schedule: { fallback_models: null, expected_lock_version: 1 } })
    expect(restored.body.schedule.fallback_models).toBeNull()
  })
})
