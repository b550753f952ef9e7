// The approval stage over HTTP (runs supplement "Task kinds and statuses", approve / deny, inbox
// rows): a model's tool call parks needs_approval under approval_mode ask or an ask rule, is
// listed as an approval row to the creator's agent application, dispatches on approve and fails
// approval_denied on deny; rules grant, park or fail by their grammar, refused when malformed.
import * as Repo from "@troupe/storage/repositories/Actors"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { createMember, personalToken } from "../../support/people.ts"
import { type AgentRunWorld, agentRunWorld, untilRun } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("approval-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const call = "s1-model-1-t0"

/** A run whose one model round calls grep with `input` (local/script), under the given approval shell. */
const modelCallRun = async (shell: Record<string, unknown>, input: Record<string, unknown> = {}) => {
  const directive = JSON.stringify({ tool_calls: [{ name: "grep", input }] })
  const created = await calls.create({
    default_runner_executor_public_id: runner.publicId,
    ...shell,
    steps: [{ model: { prompt: directive, model: { model: "local/script" }, tools: ["grep"] } }]
  })
  expect(created.status).toBe(201)
  const id = created.body.run.public_id as string
  await calls.call("POST", `/${id}/start`)
  return id
}

const trace = async (id: string) => (await calls.call("GET", `/${id}`)).body.run
const taskOf = async (id: string, key: string) =>
  (await trace(id)).tasks.find((each: { key: string }) => each.key === key)

/** The model's call once it left waiting (addressed and judged). */
const judged = (id: string) =>
  untilRun(server, id, async () => {
    const task = await taskOf(id, call)
    return task !== undefined && task.status !== "waiting" ? task : undefined
  })

const rowsOf = async (token: string, id: string) =>
  (await inboxCalls(server, token).list()).body.tasks.filter(
    (row: { run_public_id: string }) => row.run_public_id === id
  )

describe("approval_mode ask", () => {
  it("an allow rule grants the call under ask", async () => {
    const id = await modelCallRun({ approval_mode: "ask", approval_rules: [{ tool: "grep", verdict: "allow" }] })
    expect((await judged(id)).status).toBe("dispatched")
  })
})

describe("approval_mode rules", () => {
  it("an allow rule matching a glob grants the call", async () => {
    const id = await modelCallRun({ approval_mode: "rules", approval_rules: [{ tool: "gr*", verdict: "allow" }] })
    expect((await judged(id)).status).toBe("dispatched")
  })

  it("no matching rule fails the call approval_denied 'no approval rule allows grep'", async () => {
    const id = await modelCallRun({ approval_mode: "rules", approval_rules: [{ tool: "lint", verdict: "allow" }] })
    expect(await judged(id)).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no approval rule allows grep" }
    })
  })

  it("path and match judge the call's input; deny wins over allow and carries its reason", async () => {
    const rules = [
      { tool: "grep", verdict: "allow" },
      { tool: "grep", path: "pattern", match: "secret*", verdict: "deny", reason: "no secrets" }
    ]
    const allowed = await modelCallRun({ approval_mode: "rules", approval_rules: rules }, { pattern: "todo" })
    expect((await judged(allowed)).status).toBe("dispatched")
    const denied = await modelCallRun({ approval_mode: "rules", approval_rules: rules }, { pattern: "secret-key" })
    expect(await judged(denied)).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "no secrets" }
    })
  })

  it("an authored tool step is granted by origin: a rule without origin speaks to model calls only", async () => {
    const run = async (rules: ReadonlyArray<unknown>) => {
      const created = await calls.create({
        approval_mode: "rules",
        approval_rules: rules,
        default_runner_executor_public_id: runner.publicId,
        steps: [{ tool: { name: "grep" } }]
      })
      const id = created.body.run.public_id
      return (await calls.call("POST", `/${id}/start`)).body.run.tasks[0]
    }
    expect((await run([{ tool: "grep", verdict: "ask" }])).status).toBe("dispatched")
  })
})

describe("approval_rules grammar", () => {
  const refusals: ReadonlyArray<readonly [string, unknown]> = [
    ["not a list", { tool: "grep", verdict: "allow" }],
    ["a rule that is not an object", ["grep"]],
    ["tool missing", [{ verdict: "allow" }]],
    ["tool empty", [{ tool: "", verdict: "allow" }]],
    ["an empty alternative", [{ tool: "grep|", verdict: "allow" }]],
    ["verdict missing", [{ tool: "grep" }]],
    ["verdict unknown", [{ tool: "grep", verdict: "maybe" }]],
    ["an unknown member", [{ tool: "grep", verdict: "allow", when: "always" }]],
    ["match without path", [{ tool: "grep", verdict: "allow", match: "x*" }]],
    ["path not a string", [{ tool: "grep", verdict: "allow", path: 3 }]],
    ["reason not a string", [{ tool: "grep", verdict: "deny", reason: 1 }]],
    ["origin unknown", [{ tool: "grep", verdict: "allow", origin: "human" }]]
  ]
  for (const [name, rules] of refusals) {
    it(`invalid_approval_rules: ${name}`, async () => {
      const refused = await calls.create({ approval_mode: "rules", approval_rules: rules, steps: [] })
      expect([refused.status, refused.body.error.code]).toEqual([422, "invalid_approval_rules"])
    })
  }

  it("approval_mode is judged before approval_rules, and approval_rules before prompt_mechanism", async () => {
    const mode = await calls.create({ approval_mode: "often", approval_rules: "bad", steps: [] })
    expect(mode.body.error.code).toBe("invalid_approval_mode")
    const rules = await calls.create({
      approval_mode: "rules",
      approval_rules: "bad",
      prompt_mechanism: "x",
      steps: []
    })
    expect(rules.body.error.code).toBe("invalid_approval_rules")
  })

  it("null rules and a well-formed rule list are accepted and shown on the trace", async () => {
    const rule = { tool: "grep|lint", path: "pattern", match: "a?c*", verdict: "ask", reason: "check", origin: "model" }
    const created = await calls.create({
      approval_mode: "rules",
      approval_rules: [rule],
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep" } }]
    })
    expect(created.status).toBe(201)
    expect(created.body.run).toMatchObject({ approval_mode: "rules", approval_rules: [rule] })
    const none = await calls.create({
      approval_mode: "ask",
      approval_rules: null,
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep" } }]
    })
    expect(none.status).toBe(201)
  })
})

// A parked call is needs_approval, listed as an approval row to the creator's agent application
// (listed from the instant it parked), decided by approve or deny.
describe("parking an approval", () => {
  it("a model's tool call parks needs_approval; the run needs attention approval_required", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    expect(await judged(id)).toMatchObject({ status: "needs_approval", tool_name: "grep", waiting_on: [] })
    await waitForActorState(server, "run", id, "needs_attention")
    expect((await trace(id)).attention).toEqual({ reason: "approval_required", blocked_task_keys: [call] })
  })
  it("approve dispatches the call to its runner with approval {origin, decided_by, decided_at}; the row moves inboxes", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    const approved = await calls.call("POST", `/${id}/tasks/${call}/approve`, {})
    expect(approved.status).toBe(200)
    expect(approved.body.task).toMatchObject({
      key: call,
      status: "dispatched",
      approval: { origin: "agent", decided_by: world.agent.publicId, decided_at: expect.any(String) }
    })
    expect(await rowsOf(world.application.token, id)).toEqual([])
    const [row] = await rowsOf(runner.token, id)
    expect(row).toMatchObject({ kind: "tool_call", task_key: call, tool_name: "grep" })
    const inbox = inboxCalls(server, runner.token)
    const claimed = await inbox.claim(id, call)
    await inbox.commit(id, call, { claim_token: claimed.body.claim.claim_token, content: "2 hits" })
    await waitForActorState(server, "run", id, "completed")
  })
  it("deny fails the call approval_denied with the reason as error.detail; the row leaves", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    const denied = await calls.call("POST", `/${id}/tasks/${call}/deny`, { reason: "not on prod" })
    expect(denied.status).toBe(200)
    expect(denied.body.task).toMatchObject({
      status: "failed",
      error: { key: "approval_denied", detail: "not on prod" },
      approval: { origin: "agent", decided_by: world.agent.publicId }
    })
    expect(await rowsOf(world.application.token, id)).toEqual([])
  })
  it("a denial's reason is kept to its first 256 bytes", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    const denied = await calls.call("POST", `/${id}/tasks/${call}/deny`, { reason: "r".repeat(300) })
    expect(denied.body.task.error.detail).toBe("r".repeat(256))
  })
  it("approve or deny of a task not at needs_approval is 409 not_awaiting_approval", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    await calls.call("POST", `/${id}/tasks/${call}/approve`, {})
    const again = await calls.call("POST", `/${id}/tasks/${call}/approve`, {})
    expect([again.status, again.body.error.code]).toEqual([409, "not_awaiting_approval"])
    const deny = await calls.call("POST", `/${id}/tasks/${call}/deny`, {})
    expect([deny.status, deny.body.error.code]).toEqual([409, "not_awaiting_approval"])
  })
  it("another member with write standing is refused 403 not_authorized, after not_adjudicable and an unknown key's 404", async () => {
    const bystander = await personalToken(server, await createMember(server))
    const workspace = `/agent_api/v1/workspaces/${world.workspaceId}`
    const ownerToken = await personalToken(server, world.owner)
    const read = await request(server.baseUrl, "GET", workspace, { headers: bearer(ownerToken) })
    expect(read.status, JSON.stringify(read.body)).toBe(200)
    const opened = await request(server.baseUrl, "PUT", `${workspace}/access_mode`, {
      headers: bearer(ownerToken),
      body: { access_mode: { access_mode: "account_wide", lock_version: read.body.workspace.lock_version } }
    })
    expect(opened.status, JSON.stringify(opened.body)).toBe(200)
    const verb = (id: string, key: string, name: "approve" | "deny") =>
      request(server.baseUrl, "POST", `${calls.base}/${id}/tasks/${key}/${name}`, {
        headers: bearer(bystander),
        body: {}
      }).then((answer) => [answer.status, answer.body.error?.code])
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    for (const name of ["approve", "deny"] as const) {
      expect(await verb(id, call, name)).toEqual([403, "not_authorized"])
      expect(await verb(id, "no-such-task", name)).toEqual([404, "not_found"])
    }
    expect((await taskOf(id, call)).status).toBe("needs_approval")
    expect((await calls.call("POST", `/${id}/stop`, { force: true })).status).toBe(200)
    await waitForActorState(server, "run", id, "canceled")
    expect(await verb(id, call, "approve")).toEqual([409, "not_adjudicable"])
  })

  it("an ask rule parks the call", async () => {
    const id = await modelCallRun({ approval_mode: "rules", approval_rules: [{ tool: "grep|lint", verdict: "ask" }] })
    expect((await judged(id)).status).toBe("needs_approval")
  })
  it("an ask rule naming origin author parks an authored tool step", async () => {
    const run = async (rules: ReadonlyArray<unknown>) => {
      const created = await calls.create({
        approval_mode: "rules",
        approval_rules: rules,
        default_runner_executor_public_id: runner.publicId,
        steps: [{ tool: { name: "grep" } }]
      })
      const id = created.body.run.public_id
      return (await calls.call("POST", `/${id}/start`)).body.run.tasks[0]
    }
    expect((await run([{ tool: "grep", verdict: "ask", origin: "author" }])).status).toBe("needs_approval")
  })
})

// Approval rows (spec "Inbox task": "approval adds tool_name, tool_input and effect_profile"; runs
// supplement: "approval 24 h"): the row's timeout_ms is the hold, and it carries the target's
// announced effect_profile.
describe("approval rows", () => {
  it("the parked call is listed as an approval row to the creator's agent application, not to the runner", async () => {
    const id = await modelCallRun({ approval_mode: "ask" }, { pattern: "TODO" })
    await judged(id)
    const [row, ...rest] = await rowsOf(world.application.token, id)
    expect(rest).toEqual([])
    expect(row).toMatchObject({
      kind: "approval",
      run_public_id: id,
      task_key: call,
      tool_name: "grep",
      tool_input: { pattern: "TODO" },
      claimed: false,
      timeout_ms: 86_400_000,
      addressed_to: { role: "agent_application", executor_public_id: world.application.publicId }
    })
    expect(await rowsOf(runner.token, id)).toEqual([])
  })
  it("an approval row carries the tool's effect_profile", async () => {
    const id = await modelCallRun({ approval_mode: "ask" })
    await judged(id)
    const [row] = await rowsOf(world.application.token, id)
    expect(row.effect_profile).toEqual(readOnlyTool("grep").effect_profile)
  })
})

// The run's snapshot, written on every step, keeps no tool input (decisions: "Tool inputs leave the
// run's snapshot"): the task row keeps it, and the verdict judged over it as the task entered the run.
describe("tool inputs live on the task rows, not in the run's snapshot", () => {
  const marker = `marker-${"q".repeat(8_000)}`
  const input = { pattern: `secret-${marker}` }
  const snapshotOf = async (id: string) =>
    JSON.stringify((await server.run(Repo.findSnapshotWithParts("run", id)))?.snapshot)
  const taskRead = async (id: string, key: string) => (await calls.call("GET", `/${id}/tasks/${key}`)).body.task

  it("a model call: an ask rule on its input parks it, its approval row and task read show the input", async () => {
    const rules = [
      { tool: "grep", verdict: "allow" },
      { tool: "grep", path: "pattern", match: "secret*", verdict: "ask" }
    ]
    const id = await modelCallRun({ approval_mode: "rules", approval_rules: rules }, input)
    expect((await judged(id)).status).toBe("needs_approval")
    const [row] = await rowsOf(world.application.token, id)
    expect(row).toMatchObject({ kind: "approval", task_key: call, tool_input: input })
    expect((await taskRead(id, call)).tool_input).toEqual(input)
    expect((await snapshotOf(id)).includes(marker)).toBe(false)
    await calls.call("POST", `/${id}/tasks/${call}/approve`, {})
    const [work] = await rowsOf(runner.token, id)
    expect(work).toMatchObject({ kind: "tool_call", task_key: call, tool_input: input })
    expect((await snapshotOf(id)).includes(marker)).toBe(false)
  })

  it("an authored step: a deny rule on its input fails it approval_denied; its task read shows the input", async () => {
    const created = await calls.create({
      approval_mode: "rules",
      approval_rules: [{ tool: "grep", path: "pattern", match: "secret*", verdict: "deny", origin: "author" }],
      default_runner_executor_public_id: runner.publicId,
      steps: [{ tool: { name: "grep", input, key: "scan" } }]
    })
    expect(created.status).toBe(201)
    const id = created.body.run.public_id as string
    const started = await calls.call("POST", `/${id}/start`)
    expect(started.body.run.tasks[0]).toMatchObject({ status: "failed", error: { key: "approval_denied" } })
    expect((await taskRead(id, "scan")).tool_input).toEqual(input)
    expect((await snapshotOf(id)).includes(marker)).toBe(false)
  })
})
