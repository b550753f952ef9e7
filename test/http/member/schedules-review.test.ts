// Member: schedules, the supplement's rules checked one by one (supplement "Schedules"; its own
// server: the clock moves minutes): Idempotency-Key bounds, rule bounds and normalization, edits
// (reasoning-only, fallback_models [] and null as the child's first input carries them), a
// one-time schedule's clock (completed, then resume and verbs refused), a skipped occurrence while
// an execution is unfinished, the executions' pages, create on an archived conversation, the
// lists' last pages (next_after null), read level's standing and an archived conversation's verbs.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForMessages } from "../../support/actors.ts"
import { tenYearsAfter } from "../../support/calendar.ts"
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
  // The steward's workspace: one an agent made would be dedicated to it, fencing out its sibling as answerer.
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
    headers: { ...bearer(account.ownerToken), "idempotency-key": "ws-rev" },
    body: { workspace: { name: "review" } }
  })
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
    // Instants from the server's year, so they stay ahead of it (and within 10 years) in any year.
    const year = new Date(await serverNow(server)).getUTCFullYear()
    const refused: Array<[Record<string, unknown>, string]> = [
      [{ kind: "interval", every_seconds: 31_536_001 }, "rule.every_seconds"],
      [{ kind: "interval", every_seconds: "600" }, "rule.every_seconds"],
      [{ kind: "interval", every_seconds: 600, starts_at: "2030-01-01T00:00:00" }, "rule.starts_at"],
      [{ kind: "interval", every_seconds: 600, starts_at: `${year + 11}-01-01T00:00:00Z` }, "rule.starts_at"],
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
      rule: { kind: "interval", every_seconds: 600, starts_at: `${year + 1}-06-01T12:00:00+02:00` }
    })
    expect(starts.body.schedule).toMatchObject({
      rule: { kind: "interval", every_seconds: 600, starts_at: `${year + 1}-06-01T10:00:00.000Z` },
      next_run_at: `${year + 1}-06-01T10:00:00.000Z`
    })
  })

  it("a name of 255 characters (code points) is kept; 256 is 422 validation_failed naming name", async () => {
    const rule = { kind: "interval", every_seconds: 600 }
    const kept = await create({ prompt: "N", name: "😀".repeat(255), rule })
    expect([kept.status, kept.body.schedule?.name]).toEqual([201, "😀".repeat(255)])
    const long = await create({ prompt: "N", name: "n".repeat(256), rule })
    expect([long.status, long.body.error.code]).toEqual([422, "validation_failed"])
    expect(long.body.error.message).toContain("name")
  })

  it("run_at may be up to 10 calendar years ahead (leap days counted), not 10 × 365.25 days", async () => {
    const bound = tenYearsAfter(await serverNow(server))
    const at = (millis: number) => new Date(bound + millis).toISOString()
    const inside = await create({ prompt: "Far", rule: { kind: "once", run_at: at(-60_000) } })
    expect(inside.status).toBe(201)
    const beyond = await create({ prompt: "Farther", rule: { kind: "once", run_at: at(60_000) } })
    expect([beyond.status, beyond.body.error.code]).toEqual([422, "validation_failed"])
    expect(beyond.body.error.message).toContain("rule.run_at")
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
      // Every page holds a row: a next_after never leads to an empty page.
      expect(page.body.schedules).toHaveLength(1)
      if (page.body.pagination.next_after === null) break
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
    // The last page is full, yet nothing follows: next_after is null, last_cursor still the last row's.
    expect(second.body.pagination.next_after).toBeNull()
    expect(second.body.pagination.last_cursor).toEqual(expect.any(String))
    const both = await call("GET", `${one}/executions?limit=2`)
    expect(both.body.executions).toHaveLength(2)
    expect(both.body.pagination).toEqual({ next_after: null, last_cursor: second.body.pagination.last_cursor })
    const past = await call("GET", `${one}/executions?after=${second.body.pagination.last_cursor}`)
    expect(past.body).toEqual({
      executions: [],
      pagination: { next_after: null, last_cursor: second.body.pagination.last_cursor }
    })
    expect((await call("GET", `${one}/executions?after=nonsense`)).body.error.code).toBe("parameter_invalid")
  })

  it("an executions cursor carries no internal row id (spec: internal row ids are never exposed)", async () => {
    const made = await create({ prompt: "Opaque", rule: { kind: "interval", every_seconds: 600 } })
    const one = `${schedules()}/${made.body.schedule.public_id}`
    const ran = await call("POST", `${one}/run`)
    expect(ran.status).toBe(200)
    const page = await call("GET", `${one}/executions?limit=1`)
    const rowIds = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ id: string }>`
          SELECT e.id::text AS id FROM schedule_executions e JOIN schedules s ON s.id = e.schedule_id
          WHERE s.public_id = ${made.body.schedule.public_id}`
      )
    )
    const decoded: Array<unknown> = JSON.parse(Buffer.from(page.body.pagination.last_cursor, "base64url").toString())
    for (const { id } of rowIds) {
      expect(decoded).not.toContain(id)
      expect(decoded).not.toContain(Number(id))
    }
    // The cursor still pages: nothing follows the only execution.
    const after = await call("GET", `${one}/executions?after=${page.body.pagination.last_cursor}`)
    expect(after.body).toEqual({
      executions: [],
      pagination: { next_after: null, last_cursor: page.body.pagination.last_cursor }
    })
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

  it("a one-time schedule whose dispatch opened nothing completes naming why, and no input", async () => {
    const made = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Archived before its run_at" } },
      { "idempotency-key": "conv-archived-once" }
    )
    const archivedId = made.body.conversation.public_id
    const runAt = await later(120_000)
    const once = await create({ prompt: "Never", rule: { kind: "once", run_at: runAt } }, "archived-once", archivedId)
    const id = once.body.schedule.public_id
    expect((await call("POST", `/workspaces/${workspaceId}/conversations/${archivedId}/archive`)).status).toBe(200)
    await moveClockTo(server, Date.parse(runAt) + 1_000)
    await waitForSteps(server, async () => (await scheduleRowOf(server, id)).status === "completed")
    // The dispatch's refusal reaches the schedule in a later step.
    await waitForMessages(server, "schedule", id)
    const read = await call("GET", `${schedules(archivedId)}/${id}`)
    expect(read.body.schedule).toMatchObject({
      status: "completed",
      next_run_at: null,
      last_error_code: "conversation_archived",
      last_input_public_id: null,
      last_execution: null,
      lock_version: 2
    })
  })
})

describe("Schedule list pages", () => {
  it("a page holding the last rows answers next_after null, in both lists and both orders", async () => {
    const made = await call(
      "POST",
      "/workspaces",
      { workspace: { name: "pages" } },
      { "idempotency-key": "ws-pages-review" }
    )
    const pagesWorkspace = made.body.workspace.public_id
    const room = await call(
      "POST",
      `/workspaces/${pagesWorkspace}/conversations`,
      { conversation: { title: "Pages" } },
      { "idempotency-key": "conv-pages-review" }
    )
    const collection = `/workspaces/${pagesWorkspace}/conversations/${room.body.conversation.public_id}/schedules`
    const ids: Array<string> = []
    for (const n of [1, 2]) {
      const schedule = { prompt: `P${n}`, rule: { kind: "interval", every_seconds: 600 } }
      const answer = await call("POST", collection, { schedule }, { "idempotency-key": `pages-${n}` })
      ids.push(answer.body.schedule.public_id)
    }
    for (const list of [collection, `/workspaces/${pagesWorkspace}/schedules`]) {
      for (const order of ["asc", "desc"]) {
        const expected = order === "asc" ? ids : [...ids].reverse()
        const whole = await call("GET", `${list}?limit=2&order=${order}`)
        expect(whole.body.schedules.map((each: { public_id: string }) => each.public_id)).toEqual(expected)
        expect(whole.body.pagination.next_after).toBeNull()
        const first = await call("GET", `${list}?limit=1&order=${order}`)
        expect(first.body.schedules.map((each: { public_id: string }) => each.public_id)).toEqual([expected[0]])
        const last = await call("GET", `${list}?limit=1&order=${order}&after=${first.body.pagination.next_after}`)
        expect(last.body.schedules.map((each: { public_id: string }) => each.public_id)).toEqual([expected[1]])
        expect(last.body.pagination.next_after).toBeNull()
      }
    }
  })
})

describe("Schedule standing by level", () => {
  it("read level reads, lists and pages executions; every write is 403 not_authorized", async () => {
    const shared = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Read only", access: { default: "read" } } },
      { "idempotency-key": "conv-read-level" }
    )
    const sharedId = shared.body.conversation.public_id
    const made = await create({ prompt: "Watched", rule: { kind: "interval", every_seconds: 600 } }, "read", sharedId)
    const id = made.body.schedule.public_id
    const asOther = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
      request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(other.token), ...headers }, body })
    const read = await asOther("GET", `${schedules(sharedId)}/${id}`)
    expect(read.status).toBe(200)
    expect(read.body.schedule.public_id).toBe(id)
    const listed = await asOther("GET", schedules(sharedId))
    expect(listed.body.schedules.map((each: { public_id: string }) => each.public_id)).toEqual([id])
    const across = await asOther("GET", `/workspaces/${workspaceId}/schedules?limit=100`)
    expect(across.body.schedules.map((each: { public_id: string }) => each.public_id)).toContain(id)
    expect((await asOther("GET", `${schedules(sharedId)}/${id}/executions`)).status).toBe(200)
    const writes = [
      await asOther(
        "POST",
        schedules(sharedId),
        { schedule: { prompt: "Mine", rule: { kind: "interval", every_seconds: 600 } } },
        { "idempotency-key": "read-level-create" }
      ),
      await asOther("PATCH", `${schedules(sharedId)}/${id}`, { schedule: { name: "x", expected_lock_version: 0 } }),
      ...(await Promise.all(
        ["pause", "resume", "cancel", "run"].map((verb) => asOther("POST", `${schedules(sharedId)}/${id}/${verb}`))
      ))
    ]
    for (const refused of writes) {
      expect({ status: refused.status, code: refused.body.error?.code }).toEqual({
        status: 403,
        code: "not_authorized"
      })
    }
    expect((await call("GET", `${schedules(sharedId)}/${id}`)).body.schedule).toMatchObject({
      status: "active",
      lock_version: 0,
      last_execution: null
    })
  })
})

describe("Schedules of an archived conversation", () => {
  it("read, list and page executions; every verb and PATCH is 409 conversation_archived until unarchived", async () => {
    const made = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations`,
      { conversation: { title: "Shelved" } },
      { "idempotency-key": "conv-shelved" }
    )
    const shelved = made.body.conversation.public_id
    const created = await create({ prompt: "Shelf", rule: { kind: "interval", every_seconds: 600 } }, "shelf", shelved)
    const id = created.body.schedule.public_id
    expect((await call("POST", `/workspaces/${workspaceId}/conversations/${shelved}/archive`)).status).toBe(200)
    expect((await call("GET", `${schedules(shelved)}/${id}`)).status).toBe(200)
    expect((await call("GET", schedules(shelved))).body.schedules).toHaveLength(1)
    expect((await call("GET", `${schedules(shelved)}/${id}/executions`)).status).toBe(200)
    for (const verb of ["pause", "resume", "cancel", "run"]) {
      const refused = await call("POST", `${schedules(shelved)}/${id}/${verb}`)
      expect({ verb, status: refused.status, code: refused.body.error?.code }).toEqual({
        verb,
        status: 409,
        code: "conversation_archived"
      })
    }
    const patched = await call("PATCH", `${schedules(shelved)}/${id}`, {
      schedule: { name: "x", expected_lock_version: 0 }
    })
    expect([patched.status, patched.body.error?.code]).toEqual([409, "conversation_archived"])
    expect((await call("GET", `${schedules(shelved)}/${id}`)).body.schedule).toMatchObject({
      status: "active",
      lock_version: 0
    })
    expect((await call("POST", `/workspaces/${workspaceId}/conversations/${shelved}/unarchive`)).status).toBe(200)
    const paused = await call("POST", `${schedules(shelved)}/${id}/pause`)
    expect(paused.body.schedule).toMatchObject({ status: "paused", lock_version: 1 })
  })
})
