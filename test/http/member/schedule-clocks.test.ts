// Schedule clocks under a moved clock (supplement "Schedules"; its own server: the clock moves a
// year). Daily rules across both DST changes of America/New_York (the spring gap has no
// occurrence, the autumn repeat counts once) and in Asia/Tokyo (no DST); an interval after
// downtime coalesces its missed occurrences into one (scheduled_for = the latest missed). Rows are
// read from the database: the jumps outlive every token. The clock first moves to a quiet noon
// of next year, so neither the time of day the suite runs at nor the year it runs in matters.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { executionsOf, moveClockTo, scheduleRowOf, serverNow } from "../../support/schedules.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
let workspaceId: string
let conversationId: string
const ids: Record<string, string> = {}
const createdAt: Record<string, number> = {}
let onceRunAt: number

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(agent.token), ...headers }, body })

const create = async (name: string, rule: Record<string, unknown>) => {
  const made = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations/${conversationId}/schedules`,
    { schedule: { name, prompt: `Tick ${name}`, rule, model: { model: "local/echo" } } },
    { "idempotency-key": `clock-${name}` }
  )
  expect(made.status).toBe(201)
  ids[name] = made.body.schedule.public_id
  createdAt[name] = Date.parse(made.body.schedule.created_at)
}

/** Waits until the schedule has `count` executions, every one completed; answers them. */
const executions = async (name: string, count: number) => {
  await waitForSteps(server, async () => {
    const rows = await executionsOf(server, ids[name]!)
    return rows.length === count && rows.every((row) => row.turn_status === "completed")
  })
  // Each settled reply has told the schedule (its execution finished) before the next jump.
  await waitForMessages(server, "schedule", ids[name]!)
  return executionsOf(server, ids[name]!)
}

const iso = (date: Date | null) => date?.toISOString() ?? null

const day = 86_400_000
/** Midnight UTC of the `nth` Sunday of `month` (0-based) in `year`. */
const nthSunday = (year: number, month: number, nth: number) => {
  const first = Date.UTC(year, month, 1)
  return first + (((7 - new Date(first).getUTCDay()) % 7) + 7 * (nth - 1)) * day
}
/** The instant `hours:minutes` UTC on the day starting at `midnight`, as the server writes it. */
const at = (midnight: number, hours: number, minutes = 0) =>
  new Date(midnight + (hours * 60 + minutes) * 60_000).toISOString()
let springSunday: number
let autumnSunday: number

beforeAll(async () => {
  server = await startTestServer()
  const year = new Date(await serverNow(server)).getUTCFullYear() + 1
  await moveClockTo(server, Date.UTC(year, 0, 10, 12))
  springSunday = nthSunday(year, 2, 2)
  autumnSunday = nthSunday(year, 10, 1)
  const account = await twoStewards(server, { owner: ["clock-agent"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  const made = await call("POST", "/workspaces", { workspace: { name: "clocks" } }, { "idempotency-key": "ws-clk" })
  workspaceId = made.body.workspace.public_id
  const conversation = await call(
    "POST",
    `/workspaces/${workspaceId}/conversations`,
    { conversation: {} },
    { "idempotency-key": "conv-clk" }
  )
  conversationId = conversation.body.conversation.public_id
  await create("every-minute", { kind: "interval", every_seconds: 60 })
  onceRunAt = (await serverNow(server)) + 30 * 60_000
  await create("once", { kind: "once", run_at: new Date(onceRunAt).toISOString() })
  await create("new-york-0230", { kind: "daily", local_time: "02:30", time_zone: "America/New_York" })
  await create("new-york-0130", { kind: "daily", local_time: "01:30", time_zone: "America/New_York" })
  await create("tokyo-0900", { kind: "daily", local_time: "09:00", time_zone: "Asia/Tokyo" })
})
afterAll(() => server?.close())

describe("Schedule clocks", () => {
  it("an interval after downtime dispatches once, for the latest missed occurrence, within 5 s", async () => {
    const created = createdAt["every-minute"]!
    server.clock.advance("10 minutes")
    server.clock.advance("30 seconds")
    const jumped = await serverNow(server)
    const [execution, ...more] = await executions("every-minute", 1)
    expect(more).toEqual([])
    const row = await scheduleRowOf(server, ids["every-minute"]!)
    const missed = execution!.scheduled_for.getTime()
    expect(missed).toBeLessThanOrEqual(jumped)
    expect(missed).toBeGreaterThan(jumped - 60_000)
    expect((missed - created) % 60_000).toBe(0)
    expect(row.next_run_at!.getTime()).toBe(missed + 60_000)
    expect(execution!.created_at.getTime() - jumped).toBeLessThan(5_000)
    // Stop it so the later jumps see no more of it.
    const canceled = await call(
      "POST",
      `/workspaces/${workspaceId}/conversations/${conversationId}/schedules/${ids["every-minute"]}/cancel`
    )
    expect(canceled.body.schedule.status).toBe("canceled")
  })

  it("Schedule: active --one-time clock dispatched--> completed", async () => {
    const runAt = onceRunAt
    await moveClockTo(server, runAt + 1_000)
    const [execution] = await executions("once", 1)
    expect(execution!.scheduled_for.getTime()).toBe(runAt)
    expect(await scheduleRowOf(server, ids.once!)).toMatchObject({ status: "completed", next_run_at: null })
  })

  it("daily across the spring gap of America/New_York: the gap day has no occurrence; Tokyo keeps 00:00Z", async () => {
    const saturday = springSunday - day
    const monday = springSunday + day
    await moveClockTo(server, Date.parse(at(saturday, 7, 30)) + 1_000)
    const [coalesced] = await executions("new-york-0230", 1)
    expect(iso(coalesced!.scheduled_for)).toBe(at(saturday, 7, 30))
    expect(iso((await scheduleRowOf(server, ids["new-york-0230"]!)).next_run_at)).toBe(at(monday, 6, 30))
    const [tokyo] = await executions("tokyo-0900", 1)
    expect(iso(tokyo!.scheduled_for)).toBe(at(saturday, 0))
    expect(iso((await scheduleRowOf(server, ids["tokyo-0900"]!)).next_run_at)).toBe(at(springSunday, 0))
    await executions("new-york-0130", 1)

    await moveClockTo(server, Date.parse(at(monday, 6, 30)) + 1_000)
    const [, after] = await executions("new-york-0230", 2)
    expect(iso(after!.scheduled_for)).toBe(at(monday, 6, 30))
    expect(iso((await scheduleRowOf(server, ids["new-york-0230"]!)).next_run_at)).toBe(at(monday + day, 6, 30))
    const [, tokyoAfter] = await executions("tokyo-0900", 2)
    expect(iso(tokyoAfter!.scheduled_for)).toBe(at(monday, 0))
    expect(iso((await scheduleRowOf(server, ids["tokyo-0900"]!)).next_run_at)).toBe(at(monday + day, 0))
    const [, early] = await executions("new-york-0130", 2)
    expect(iso(early!.scheduled_for)).toBe(at(monday, 5, 30))
  })

  it("daily across the autumn repeat of America/New_York: the repeated 01:30 counts once, at its earlier instant", async () => {
    const saturday = autumnSunday - day
    const monday = autumnSunday + day
    await moveClockTo(server, Date.parse(at(saturday, 5, 30)) + 1_000)
    const [, , before] = await executions("new-york-0130", 3)
    expect(iso(before!.scheduled_for)).toBe(at(saturday, 5, 30))
    expect(iso((await scheduleRowOf(server, ids["new-york-0130"]!)).next_run_at)).toBe(at(autumnSunday, 5, 30))
    await moveClockTo(server, Date.parse(at(autumnSunday, 5, 30)) + 1_000)
    const [, , , repeated] = await executions("new-york-0130", 4)
    expect(iso(repeated!.scheduled_for)).toBe(at(autumnSunday, 5, 30))
    expect(iso((await scheduleRowOf(server, ids["new-york-0130"]!)).next_run_at)).toBe(at(monday, 6, 30))
    const [, , , tokyo] = await executions("tokyo-0900", 4)
    expect(iso(tokyo!.scheduled_for)).toBe(at(autumnSunday, 0))
    expect(iso((await scheduleRowOf(server, ids["tokyo-0900"]!)).next_run_at)).toBe(at(monday, 0))
  })
})
