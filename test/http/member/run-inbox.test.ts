// The executor inbox over HTTP (spec "Inbox task", "Executor plane"; runs supplement "Executor
// inbox"): listing bounds and cursor paging, row timeouts, the claim refusals in their order, the
// claim check, extend (its refusals in order and the new deadline) and progress frames.
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { spend, startOfWindow } from "../../support/budget.ts"
import { bearer, request } from "../../support/http.ts"
import { type AgentRunWorld, agentRunWorld, untilRun } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let other: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let inbox: ReturnType<typeof inboxCalls>

/** The announced budget of grep (lint announces none). */
const grepTimeout = 120_000

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("inbox-runner", [readOnlyTool("grep", { timeout_ms: grepTimeout }), readOnlyTool("lint")])
  other = await world.runner("other-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
  inbox = inboxCalls(server, runner.token)
})
afterAll(() => server?.close())

const serverNow = () => server.run(Clock.currentTimeMillis)

const create = async (steps: ReadonlyArray<unknown>, defaultRunner = runner.publicId) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: defaultRunner,
    steps
  })
  expect(created.status).toBe(201)
  return created.body.run.public_id as string
}

const started = async (steps: ReadonlyArray<unknown>, defaultRunner = runner.publicId) => {
  const id = await create(steps, defaultRunner)
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

const rowsFor = async (token: string, id: string) =>
  (await inboxCalls(server, token).list()).body.tasks.filter(
    (row: { run_public_id: string }) => row.run_public_id === id
  )

const refusal = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

const claimed = async (id: string, key: string) => {
  const answer = await inbox.claim(id, key)
  expect(answer.status).toBe(200)
  return answer.body.claim.claim_token as string
}

describe("Inbox listing", () => {
  it("limit is 1 to 200 (else 400 parameter_invalid); an unparseable cursor is 400 parameter_invalid", async () => {
    for (const limit of ["0", "201", "abc", "1.5", "-1", "1e2", "0x10", "+5", "5.0"]) {
      expect(refusal(await inbox.list(`?limit=${limit}`))).toEqual([400, "parameter_invalid"])
    }
    expect((await inbox.list("?limit=200")).status).toBe(200)
    expect((await inbox.list("?limit=1")).status).toBe(200)
    expect(refusal(await inbox.list("?after=not-a-cursor"))).toEqual([400, "parameter_invalid"])
  })

  it("pages by dispatch time then key: next_after continues where a page stopped", async () => {
    const pager = await world.runner("pager-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
    const id = await started(
      [
        {
          parallel: [
            { tool: { name: "grep", key: "p3" } },
            { tool: { name: "grep", key: "p1" } },
            { tool: { name: "grep", key: "p2" } }
          ]
        },
        { tool: { name: "lint", key: "after" } }
      ],
      pager.publicId
    )
    const pages = inboxCalls(server, pager.token)
    const first = await pages.list("?limit=2")
    expect(first.status).toBe(200)
    expect(first.body.tasks.map((row: { task_key: string }) => row.task_key)).toEqual(["p1", "p2"])
    expect(first.body.pagination.next_after).toEqual(expect.any(String))
    const second = await pages.list(`?limit=2&after=${encodeURIComponent(first.body.pagination.next_after)}`)
    expect(second.body.tasks.map((row: { task_key: string }) => row.task_key)).toEqual(["p3"])
    expect(second.body.tasks[0].run_public_id).toBe(id)
    // The last page offers no cursor (nothing follows), even when it is short.
    expect(second.body.pagination.next_after).toBeNull()
    const exact = await pages.list("?limit=3")
    expect(exact.body.tasks).toHaveLength(3)
    expect(exact.body.pagination.next_after).toBeNull()
  })

  it("a tool row carries the runner, its target, tool_call_id = key, and deadline_at = started_at + timeout_ms", async () => {
    const id = await started([{ tool: { name: "grep", input: { q: 1 }, key: "g" } }])
    const [row] = await rowsFor(runner.token, id)
    expect(row).toMatchObject({
      kind: "tool_call",
      task_key: "g",
      tool_name: "grep",
      tool_input: { q: 1 },
      tool_call_id: "g",
      claimed: false,
      timeout_ms: grepTimeout,
      addressed_to: { role: "runner", executor_public_id: runner.publicId },
      target: { executor_public_id: runner.publicId, display_name: "Runner inbox-runner" }
    })
    expect(Date.parse(row.deadline_at) - Date.parse(row.started_at)).toBe(grepTimeout)
    expect(await rowsFor(other.token, id)).toEqual([])
  })

  it("a row's timeout_ms is the step's, else the announced one, else 600000", async () => {
    const id = await started([
      {
        parallel: [
          { tool: { name: "grep", key: "own", timeout_ms: 5000 } },
          { tool: { name: "grep", key: "announced" } },
          { tool: { name: "lint", key: "fallback" } }
        ]
      },
      { tool: { name: "lint", key: "after" } }
    ])
    const rows = await rowsFor(runner.token, id)
    const timeouts = Object.fromEntries(
      rows.map((row: { task_key: string; timeout_ms: number }) => [row.task_key, row.timeout_ms])
    )
    expect(timeouts).toEqual({ own: 5000, announced: grepTimeout, fallback: 600_000 })
  })

  it("nothing is listed for a pending run's tasks; a settled row leaves", async () => {
    const id = await create([{ tool: { name: "grep", key: "g" } }])
    expect(await rowsFor(runner.token, id)).toEqual([])
    await calls.call("POST", `/${id}/start`)
    const token = await claimed(id, "g")
    expect((await rowsFor(runner.token, id))[0]).toMatchObject({ task_key: "g", claimed: true })
    await inbox.commit(id, "g", { claim_token: token, content: "ok" })
    expect(await rowsFor(runner.token, id)).toEqual([])
  })
})

describe("Claim refusals, in order", () => {
  it("404 not_found: an unknown run, a malformed run id, an unknown task", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    expect(refusal(await inbox.claim("0190a4c5-0000-7000-8000-000000000000", "s1-tool-1"))).toEqual([404, "not_found"])
    expect(refusal(await inbox.claim("not-a-run", "s1-tool-1"))).toEqual([404, "not_found"])
    expect(refusal(await inbox.claim(id, "nope"))).toEqual([404, "not_found"])
  })

  it("409 not_addressed_here: a row addressed to another runner, or a tool row claimed by the agent application", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    expect(refusal(await inboxCalls(server, other.token).claim(id, "s1-tool-1"))).toEqual([409, "not_addressed_here"])
    expect(refusal(await inboxCalls(server, world.application.token).claim(id, "s1-tool-1"))).toEqual([
      409,
      "not_addressed_here"
    ])
  })

  it("409 not_claimable_kind: an ask row is a notice, never claimed", async () => {
    const id = await started([{ ask: { prompt: "Claim me?" } }])
    expect(refusal(await inboxCalls(server, world.application.token).claim(id, "s1-ask-1"))).toEqual([
      409,
      "not_claimable_kind"
    ])
  })

  it("409 task_not_claimable: not dispatched yet (pending run), or settled", async () => {
    const pending = await create([{ tool: { name: "grep" } }])
    expect(refusal(await inbox.claim(pending, "s1-tool-1"))).toEqual([409, "task_not_claimable"])
    const id = await started([{ tool: { name: "grep" } }])
    await inbox.commit(id, "s1-tool-1", { claim_token: await claimed(id, "s1-tool-1"), content: "done" })
    expect(refusal(await inbox.claim(id, "s1-tool-1"))).toEqual([409, "task_not_claimable"])
  })

  it("not_addressed_here is judged before task_not_claimable", async () => {
    const pending = await create([{ tool: { name: "grep" } }])
    expect(refusal(await inboxCalls(server, other.token).claim(pending, "s1-tool-1"))).toEqual([
      409,
      "not_addressed_here"
    ])
  })

  it("409 already_claimed: a second claim in the same generation, by the same executor too", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    await claimed(id, "s1-tool-1")
    expect(refusal(await inbox.claim(id, "s1-tool-1"))).toEqual([409, "already_claimed"])
  })

  it("Claimed task: dispatched --claim, addressed here, eligible--> claimed by one executor: {task, claim: {claim_token, deadline_at}}, the deadline restarted at claim time + timeout_ms", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const before = await serverNow()
    const answer = await inbox.claim(id, "s1-tool-1")
    const after = await serverNow()
    expect(answer.body.task).toMatchObject({ task_key: "s1-tool-1", claimed: true })
    expect(answer.body.claim.claim_token).toEqual(expect.any(String))
    const deadline = Date.parse(answer.body.claim.deadline_at)
    expect(deadline).toBeGreaterThanOrEqual(before + grepTimeout)
    expect(deadline).toBeLessThanOrEqual(after + grepTimeout)
    expect(answer.body.task.deadline_at).toBe(answer.body.claim.deadline_at)
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read.claimed_by).toEqual({ executor_public_id: runner.publicId })
  })

  it("the claim's and an extension's task is the row an inbox read shows right after them", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const claim = await inbox.claim(id, "s1-tool-1")
    expect(claim.status).toBe(200)
    const [listed] = await rowsFor(runner.token, id)
    expect(claim.body.task).toEqual(listed)
    expect(claim.body.claim.deadline_at).toBe(listed.deadline_at)
    const extended = await inbox.extend(id, "s1-tool-1", {
      claim_token: claim.body.claim.claim_token,
      timeout_ms: 60_000
    })
    expect(extended.status).toBe(200)
    const [relisted] = await rowsFor(runner.token, id)
    expect(extended.body.task).toEqual(relisted)
    expect(extended.body.claim.deadline_at).toBe(relisted.deadline_at)
  })

  it("a paused run's dispatched row may still be claimed", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    await calls.call("POST", `/${id}/pause`, {})
    expect((await inbox.claim(id, "s1-tool-1")).status).toBe(200)
  })
})

describe("Claim check", () => {
  it("Claim-Token missing is 400 parameter_missing; another token or executor 409 not_claimant; active until settled", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    expect(refusal(await inbox.check(id, "s1-tool-1"))).toEqual([400, "parameter_missing"])
    expect(refusal(await inbox.check(id, "s1-tool-1", "wrong"))).toEqual([409, "not_claimant"])
    expect(refusal(await inboxCalls(server, other.token).check(id, "s1-tool-1", token))).toEqual([409, "not_claimant"])
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: true } })
    await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "done" })
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: false } })
  })
})

describe("Extend, in order", () => {
  it("400 parameter_missing → 422 invalid_timeout_ms → 409 extension_too_long → 409 not_extendable (never claimed)", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const extend = (body: unknown) => inbox.extend(id, "s1-tool-1", body)
    expect(refusal(await extend({ timeout_ms: "x" }))).toEqual([400, "parameter_missing"])
    expect(refusal(await extend({ claim_token: "", timeout_ms: 1000 }))).toEqual([400, "parameter_missing"])
    for (const timeout of [0, -5, 1.5, "1000", null]) {
      expect(refusal(await extend({ claim_token: "t", timeout_ms: timeout }))).toEqual([422, "invalid_timeout_ms"])
    }
    expect(refusal(await extend({ claim_token: "t" }))).toEqual([422, "invalid_timeout_ms"])
    expect(refusal(await extend({ claim_token: "t", timeout_ms: 3_600_001 }))).toEqual([409, "extension_too_long"])
    expect(refusal(await extend({ claim_token: "t", timeout_ms: 1000 }))).toEqual([409, "not_extendable"])
  })

  it("409 not_claimant for another token or another executor; 409 not_extendable once settled or while paused", async () => {
    const id = await started([{ tool: { name: "grep" } }, { tool: { name: "grep", key: "paused" } }])
    const token = await claimed(id, "s1-tool-1")
    expect(refusal(await inbox.extend(id, "s1-tool-1", { claim_token: "wrong", timeout_ms: 1000 }))).toEqual([
      409,
      "not_claimant"
    ])
    expect(
      refusal(await inboxCalls(server, other.token).extend(id, "s1-tool-1", { claim_token: token, timeout_ms: 1000 }))
    ).toEqual([409, "not_claimant"])
    await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "done" })
    expect(refusal(await inbox.extend(id, "s1-tool-1", { claim_token: token, timeout_ms: 1000 }))).toEqual([
      409,
      "not_extendable"
    ])
    const second = await claimed(id, "paused")
    await calls.call("POST", `/${id}/pause`, {})
    expect(refusal(await inbox.extend(id, "paused", { claim_token: second, timeout_ms: 1000 }))).toEqual([
      409,
      "not_extendable"
    ])
  })

  it("an extension sets the deadline to now + timeout_ms, capped by the announced timeout_ms; same token", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    const before = await serverNow()
    const extended = await inbox.extend(id, "s1-tool-1", { claim_token: token, timeout_ms: 60_000 })
    const after = await serverNow()
    expect(extended.status).toBe(200)
    expect(extended.body.claim.claim_token).toBe(token)
    expect(extended.body.task).toMatchObject({ task_key: "s1-tool-1", claimed: true })
    const deadline = Date.parse(extended.body.claim.deadline_at)
    expect(deadline).toBeGreaterThanOrEqual(before + 60_000)
    expect(deadline).toBeLessThanOrEqual(after + 60_000)
    const capped = await inbox.extend(id, "s1-tool-1", { claim_token: token, timeout_ms: 3_600_000 })
    const cappedAt = Date.parse(capped.body.claim.deadline_at)
    expect(cappedAt).toBeGreaterThanOrEqual(after + grepTimeout)
    expect(cappedAt).toBeLessThanOrEqual((await serverNow()) + grepTimeout)
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read.deadline_at).toBe(capped.body.claim.deadline_at)
  })
})

describe("Progress", () => {
  const frame = (id: string, key: string, token: string, extra: Record<string, unknown> = {}) => ({
    frame: { run_public_id: id, task_key: key, claim_token: token, text_tail: "50%", ...extra }
  })

  it("a task frame on a live claim answers 202 {accepted: true}; one within 250 ms of it is dropped", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    const first = await inbox.progress(frame(id, "s1-tool-1", token))
    expect([first.status, first.body]).toEqual([202, { accepted: true }])
    const second = await inbox.progress(frame(id, "s1-tool-1", token, { text_tail: "51%" }))
    expect([second.status, second.body]).toEqual([202, { accepted: false }])
  })

  it("a stale token, an unknown run or a settled task answers 202 {accepted: false}", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    expect((await inbox.progress(frame(id, "s1-tool-1", "stale"))).body).toEqual({ accepted: false })
    expect((await inbox.progress(frame("0190a4c5-0000-7000-8000-000000000000", "x", token))).body).toEqual({
      accepted: false
    })
    await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "done" })
    const late = await inbox.progress(frame(id, "s1-tool-1", token))
    expect([late.status, late.body]).toEqual([202, { accepted: false }])
  })

  it("a process frame keyed by its run and the claim that started it is accepted", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    const answer = await inbox.progress({
      frame: {
        run_public_id: id,
        process_id: "proc-1",
        source: { run_public_id: id, task_key: "s1-tool-1", claim_token: token },
        lines: ["building", "done"],
        exit: 0
      }
    })
    expect([answer.status, answer.body]).toEqual([202, { accepted: true }])
  })

  it("frame absent 400 parameter_missing; not an object 400 parameter_invalid; incomplete 422 invalid_frame; over 16 KiB 413", async () => {
    expect(refusal(await inbox.progress({}))).toEqual([400, "parameter_missing"])
    expect(refusal(await inbox.progress({ frame: "x" }))).toEqual([400, "parameter_invalid"])
    expect(refusal(await inbox.progress({ frame: {} }))).toEqual([422, "invalid_frame"])
    expect(refusal(await inbox.progress({ frame: { run_public_id: "r", task_key: "k" } }))).toEqual([
      422,
      "invalid_frame"
    ])
    const big = { frame: { run_public_id: "r", task_key: "k", claim_token: "t", text_tail: "x".repeat(17 * 1024) } }
    expect(refusal(await inbox.progress(big))).toEqual([413, "content_too_large"])
  })
})

// Extend: "deadline = now + min(timeout_ms, announced timeout_ms)" (SUPPLEMENT: "capped by the
// announced timeout_ms and by one hour"), whatever the step's own budget.
describe("extend: capped by the announced timeout", () => {
  it("an extension is capped by the announced timeout_ms, not by the step's own budget", async () => {
    const id = await started([{ tool: { name: "grep", timeout_ms: 5000 } }])
    const token = await claimed(id, "s1-tool-1")
    const before = await serverNow()
    const extended = await inbox.extend(id, "s1-tool-1", { claim_token: token, timeout_ms: 60_000 })
    expect(extended.status).toBe(200)
    expect(Date.parse(extended.body.claim.deadline_at)).toBeGreaterThanOrEqual(before + 60_000)
  })
})

// Spec Limits: claim reads 600 a minute per caller, claim posts 6,000, both with a source-IP
// backstop (ten times each, per address). The windows are filled as if the requests were made.
describe("claim budgets", () => {
  // Each test spends whole windows; the later ones (and the rest of the file) start afresh.
  afterEach(() =>
    server.run(Effect.flatMap(SqlClient, (sql) => sql`DELETE FROM rate_limit_windows WHERE scope LIKE 'executor.%'`))
  )
  const ipSubject = async (scope: string) => {
    const [row] = await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql<{ subject: string }>`
          SELECT subject FROM rate_limit_windows WHERE scope = ${scope} ORDER BY window_start DESC LIMIT 1`
      )
    )
    return row!.subject
  }
  const expectLimited = (answer: { status: number; body: any; headers: Headers }) => {
    expect(refusal(answer)).toEqual([429, "rate_limited"])
    expect(answer.headers.get("retry-after")).toMatch(/^\d+$/)
    expect(Number(answer.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect(Number(answer.headers.get("retry-after"))).toBeLessThanOrEqual(60)
  }

  it("claim posts: the 6,000th in a minute is served, the 6,001st is 429 with Retry-After; another executor has its own", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    await startOfWindow(server)
    await spend(server, "executor.claim_posts", runner.publicId, 5_999)
    expect((await inbox.claim(id, "s1-tool-1")).status).toBe(200)
    expectLimited(await inbox.claim(id, "s1-tool-1"))
    expect(refusal(await inboxCalls(server, other.token).claim(id, "s1-tool-1"))).toEqual([409, "not_addressed_here"])
  })

  it("claim reads (claim checks): the 600th in a minute is served, the 601st is 429 with Retry-After", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    await startOfWindow(server)
    await spend(server, "executor.claim_reads", runner.publicId, 599)
    expect((await inbox.check(id, "s1-tool-1", token)).status).toBe(200)
    expectLimited(await inbox.check(id, "s1-tool-1", token))
    expect((await inboxCalls(server, other.token).check(id, "s1-tool-1", token)).status).toBe(409)
  })

  it("the source-address backstop is ten times each budget, across executors", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    const token = await claimed(id, "s1-tool-1")
    await startOfWindow(server)
    const others = inboxCalls(server, other.token)
    expect(refusal(await others.claim(id, "s1-tool-1"))).toEqual([409, "not_addressed_here"])
    expect((await others.check(id, "s1-tool-1", token)).status).toBe(409)
    const posts = await ipSubject("executor.claim_posts.ip")
    const reads = await ipSubject("executor.claim_reads.ip")
    await spend(server, "executor.claim_posts.ip", posts, 59_999)
    await spend(server, "executor.claim_reads.ip", reads, 5_999)
    expect(refusal(await others.claim(id, "s1-tool-1"))).toEqual([409, "not_addressed_here"])
    expect((await others.check(id, "s1-tool-1", token)).status).toBe(409)
    expectLimited(await others.claim(id, "s1-tool-1"))
    expectLimited(await others.check(id, "s1-tool-1", token))
  })
})

// Spec "Inbox task": addressed_to {role (runner, agent_application, tool_provider), ...}. A model's
// call the creator's agent application serves is addressed to it: its row's role is its own.
describe("a tool row the creator's agent application serves", () => {
  it("is addressed to role agent_application: listed, claimed and read so", async () => {
    const announced = await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
      headers: bearer(world.application.token),
      body: { tools: [readOnlyTool("app_lookup")] }
    })
    expect(announced.status).toBe(200)
    const directive = JSON.stringify({ tool_calls: [{ name: "app_lookup", input: {} }] })
    const id = await started([
      { model: { prompt: directive, model: { model: "local/script" }, tools: ["app_lookup"] } }
    ])
    const addressed = { role: "agent_application", executor_public_id: world.application.publicId }
    const row = await untilRun(server, id, async () => (await rowsFor(world.application.token, id))[0])
    expect(row).toMatchObject({ kind: "tool_call", tool_name: "app_lookup", addressed_to: addressed })
    const claim = await inboxCalls(server, world.application.token).claim(id, row.task_key)
    expect(claim.status).toBe(200)
    expect(claim.body.task.addressed_to).toEqual(addressed)
    const read = (await calls.call("GET", `/${id}/tasks/${row.task_key}`)).body.task
    expect(read.addressed_to).toEqual(addressed)
  })
})

// Runs supplement "Executor inbox": claiming restarts the deadline (claim time + timeout_ms),
// shifted by pauses. A claim taken while its run is paused starts on the run's frozen clock: the
// holder gets the full budget from the resume, and the pause before the claim is not counted twice.
describe("a claim taken while its run is paused", () => {
  it("runs its full deadline from the resume, not the pause before the claim on top", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    expect((await calls.call("POST", `/${id}/pause`, {})).status).toBe(200)
    server.clock.advance("10 minutes")
    expect((await inbox.claim(id, "s1-tool-1")).status).toBe(200)
    const before = await serverNow()
    expect((await calls.call("POST", `/${id}/resume`, {})).status).toBe(200)
    const after = await serverNow()
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    const [listed] = await rowsFor(runner.token, id)
    expect(listed.deadline_at).toBe(read.deadline_at)
    const deadline = Date.parse(read.deadline_at)
    expect(deadline).toBeGreaterThanOrEqual(before + grepTimeout)
    expect(deadline).toBeLessThanOrEqual(after + grepTimeout)
  })

  it("answers, and lists while paused, the deadline the run's clock reads: about claim time + timeout_ms", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    expect((await calls.call("POST", `/${id}/pause`, {})).status).toBe(200)
    server.clock.advance("10 minutes")
    const before = await serverNow()
    const claimed = await inbox.claim(id, "s1-tool-1")
    const after = await serverNow()
    expect(claimed.status).toBe(200)
    const answered = Date.parse(claimed.body.claim.deadline_at)
    expect(Date.parse(claimed.body.task.deadline_at)).toBe(answered)
    expect(answered).toBeGreaterThanOrEqual(before + grepTimeout)
    expect(answered).toBeLessThanOrEqual(after + grepTimeout)
    server.clock.advance("5 minutes")
    const listedAt = await serverNow()
    const [listed] = await rowsFor(runner.token, id)
    expect(Date.parse(listed.deadline_at)).toBeGreaterThan(listedAt)
    expect(Date.parse(listed.deadline_at)).toBeGreaterThanOrEqual(answered + 5 * 60_000)
  })
})

// SUPPLEMENT "Executor plane": the deadline wins, and a never-claimed row past it settles
// timed_out. A claim arriving after it, before the sweep ran, grants nothing: the row settles by
// the expiry rule and the claim is 409 task_not_claimable.
describe("a claim after the row's deadline, swept or not", () => {
  it("is 409 task_not_claimable and the task settles timed_out tool_timeout", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    server.clock.advance(grepTimeout + 1000)
    expect(refusal(await inbox.claim(id, "s1-tool-1"))).toEqual([409, "task_not_claimable"])
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read).toMatchObject({ status: "timed_out", error: { key: "tool_timeout" } })
    expect(read.claimed_by).toBeUndefined()
  })
})
