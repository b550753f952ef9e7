// Parallel steps over HTTP (runs supplement "Create and the step compiler", "Task kinds and
// statuses"): an `all` fan's follower waits on every member; a race's join task completes on
// `until` members (any or k), its losers canceled or left to run out; a race that can no longer
// reach its quorum fails join_starved / quorum_unreachable.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("fan-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const started = async (steps: ReadonlyArray<unknown>) => {
  const created = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  expect(created.status).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return { id, receipt: created.body.receipt }
}

const trace = async (id: string) => (await calls.call("GET", `/${id}`)).body.run
const taskOf = async (id: string, key: string) =>
  (await trace(id)).tasks.find((each: { key: string }) => each.key === key)

const claim = async (id: string, key: string) => {
  const claimed = await inboxCalls(server, runner.token).claim(id, key)
  expect(claimed.status).toBe(200)
  return claimed.body.claim.claim_token as string
}

const commit = async (id: string, key: string, token: string, outcome = "completed") => {
  const committed = await inboxCalls(server, runner.token).commit(id, key, {
    claim_token: token,
    content: key,
    outcome
  })
  expect(committed.status).toBe(200)
  return committed.body.task
}

const settle = async (id: string, key: string, outcome = "completed") => commit(id, key, await claim(id, key), outcome)

const grep = (key: string) => ({ tool: { name: "grep", key } })

describe("all fans", () => {
  it("an all fan's follower waits on every member; the graph draws no barrier", async () => {
    const { id } = await started([{ parallel: [grep("a"), grep("b")] }, grep("c")])
    expect(await taskOf(id, "a")).toMatchObject({ status: "dispatched" })
    expect(await taskOf(id, "b")).toMatchObject({ status: "dispatched" })
    expect(await taskOf(id, "c")).toMatchObject({ status: "waiting", after: ["a", "b"], waiting_on: ["a", "b"] })
    await settle(id, "a")
    expect(await taskOf(id, "c")).toMatchObject({ status: "waiting", waiting_on: ["b"] })
    await settle(id, "b")
    expect((await taskOf(id, "c")).status).toBe("dispatched")
    const graph = (await calls.call("GET", `/${id}/graph`)).body
    expect(graph.nodes.map((node: { key: string }) => node.key)).toEqual(["a", "b", "c"])
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: "a", to: "c", structural: true },
        { from: "b", to: "c", structural: true }
      ])
    )
    await settle(id, "c")
    await waitForActorState(server, "run", id, "completed")
  })

  it("an array member of a fan runs in sequence", async () => {
    const { id } = await started([{ parallel: [[grep("a1"), grep("a2")], grep("b")] }, grep("c")])
    expect(await taskOf(id, "a2")).toMatchObject({ status: "waiting", after: ["a1"] })
    expect((await taskOf(id, "b")).status).toBe("dispatched")
    await settle(id, "a1")
    expect((await taskOf(id, "a2")).status).toBe("dispatched")
    expect((await taskOf(id, "c")).after).toEqual(["a2", "b"])
  })
})

describe("Races", () => {
  it("until any, losers cancel: the first completion completes the join; the losers are canceled and their claims end", async () => {
    const { id, receipt } = await started([{ parallel: [grep("a"), grep("b")], until: "any", losers: "cancel" }])
    const join = receipt.deliverable_task_key as string
    expect(await taskOf(id, join)).toMatchObject({ kind: "join_task", status: "waiting", visibility: "hidden" })
    const loserToken = await claim(id, "b")
    await settle(id, "a")
    await waitForActorState(server, "run", id, "completed")
    expect(await taskOf(id, join)).toMatchObject({ status: "completed" })
    expect(await taskOf(id, "b")).toMatchObject({ status: "canceled", failure_resolution: "canceled" })
    expect((await inboxCalls(server, runner.token).check(id, "b", loserToken)).body).toEqual({
      claim: { active: false }
    })
    const graph = (await calls.call("GET", `/${id}/graph`)).body
    expect(graph.nodes.find((node: { key: string }) => node.key === join)).toMatchObject({
      kind: "join_task",
      deliverable: true,
      join: { until: "any", losers: "cancel" }
    })
  })

  it("until k with losers run_out: the join completes at k completions; the rest run out before the run completes", async () => {
    const { id, receipt } = await started([
      { parallel: [grep("a"), grep("b"), grep("c")], until: 2, losers: "run_out", key: "quorum" }
    ])
    expect(receipt.deliverable_task_key).toBe("quorum")
    await settle(id, "a")
    expect((await taskOf(id, "quorum")).status).toBe("waiting")
    await settle(id, "b")
    expect((await taskOf(id, "quorum")).status).toBe("completed")
    expect((await taskOf(id, "c")).status).toBe("dispatched")
    expect((await trace(id)).status).toBe("running")
    await settle(id, "c")
    await waitForActorState(server, "run", id, "completed")
  })

  it("a race's follower waits on its join task", async () => {
    const { id } = await started([{ parallel: [grep("a"), grep("b")], until: "any", key: "first" }, grep("next")])
    expect(await taskOf(id, "next")).toMatchObject({ after: ["first"], status: "waiting" })
    await settle(id, "b")
    expect((await taskOf(id, "next")).status).toBe("dispatched")
  })

  it("join_starved: every member of an until-any race failed; the run needs attention on the join", async () => {
    const { id } = await started([{ parallel: [grep("a"), grep("b")], until: "any", key: "starved" }])
    await settle(id, "a", "failed")
    expect((await taskOf(id, "starved")).status).toBe("waiting")
    await settle(id, "b", "failed")
    await waitForActorState(server, "run", id, "needs_attention")
    const run = await trace(id)
    expect(run.tasks.find((each: { key: string }) => each.key === "starved")).toMatchObject({
      status: "failed",
      error: { key: "join_starved" }
    })
    expect(run.attention).toMatchObject({ reason: "deliverable_unresolved", blocked_task_keys: ["starved"] })
  })

  it("quorum_unreachable: too few members can still complete for until k", async () => {
    const { id } = await started([{ parallel: [grep("a"), grep("b"), grep("c")], until: 2, key: "q" }])
    await settle(id, "a", "failed")
    expect((await taskOf(id, "q")).status).toBe("waiting")
    await settle(id, "b", "failed")
    expect(await taskOf(id, "q")).toMatchObject({ status: "failed", error: { key: "quorum_unreachable" } })
  })

  it("an until the members cannot meet is an invalid_steps entry unsatisfiable_until", async () => {
    const refused = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [{ parallel: [grep("a"), grep("b")], until: 3 }]
    })
    expect(refused.status).toBe(422)
    expect(refused.body.error.steps).toEqual([{ code: "unsatisfiable_until", path: "steps[0].until" }])
  })

  it("an all fan as the last step is an invalid_steps entry fan_needs_follower", async () => {
    const refused = await calls.create({
      approval_mode: "bypass",
      default_runner_executor_public_id: runner.publicId,
      steps: [{ parallel: [grep("a"), grep("b")] }]
    })
    expect(refused.body.error.steps).toEqual([{ code: "fan_needs_follower", path: "steps[0].parallel" }])
  })
})
