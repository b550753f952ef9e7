// Appending to a run over HTTP (runs supplement "Append"): the receipt, Idempotency-Key replays,
// the refusals in their order (each leaving the run and its revision as they were), a
// needs_attention run returned to running, and the wait an envelope's first step takes on the
// run's current deliverable.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let appends = 0

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("append-runner", [readOnlyTool("grep"), readOnlyTool("lint")])
  calls = memberCalls(server, world)
})
afterAll(() => server?.close())

const echo = (prompt: string) => ({ model: { prompt, model: { model: "local/echo" } } })

const created = async (steps: ReadonlyArray<unknown>) => {
  const answer = await calls.create({
    approval_mode: "bypass",
    default_runner_executor_public_id: runner.publicId,
    steps
  })
  expect(answer.status).toBe(201)
  return answer.body.run.public_id as string
}

const append = (id: string, body: unknown, key = `append-${++appends}`) =>
  calls.call("POST", `/${id}/tasks`, body, { "idempotency-key": key })

const trace = async (id: string) => (await calls.call("GET", `/${id}`)).body.run

const task = async (id: string, key: string) =>
  (await trace(id)).tasks.find((each: { key: string }) => each.key === key)

/** Claims and commits a dispatched tool task as the runner. */
const settle = async (id: string, key: string, outcome: "completed" | "failed" = "completed") => {
  const inbox = inboxCalls(server, runner.token)
  const claimed = await inbox.claim(id, key)
  expect(claimed.status).toBe(200)
  const committed = await inbox.commit(id, key, { claim_token: claimed.body.claim.claim_token, content: key, outcome })
  expect(committed.status).toBe(200)
}

/** Asserts an append was refused with `code` and left the run at `revision` with its tasks. */
const refused = async (id: string, body: unknown, status: number, code: string) => {
  const before = await trace(id)
  const answer = await append(id, body)
  expect([answer.status, answer.body.error?.code]).toEqual([status, code])
  const after = await trace(id)
  expect(after.tasks.map((each: { key: string }) => each.key)).toEqual(
    before.tasks.map((each: { key: string }) => each.key)
  )
  expect(after.deliverable_task_key).toBe(before.deliverable_task_key)
  return answer
}

/** A run that ran its one model step to completion. */
const completedRun = async () => {
  const id = await created([echo("done")])
  await calls.call("POST", `/${id}/start`)
  await waitForActorState(server, "run", id, "completed")
  return id
}

/** A run whose one tool step (the deliverable) failed: needs_attention, deliverable_unresolved. */
const failedDeliverable = async () => {
  const id = await created([{ tool: { name: "grep" } }])
  await calls.call("POST", `/${id}/start`)
  await settle(id, "s1-tool-1", "failed")
  await waitForActorState(server, "run", id, "needs_attention")
  return id
}

/** The run's revision, read as a stale_revision refusal reports it. */
const revisionOf = async (id: string) => {
  const answer = await append(id, { steps: [{ tool: { name: "grep" } }], expected_revision: -1 })
  expect(answer.body.error.code).toBe("stale_revision")
  return answer.body.error.current_revision as number
}

describe("Append receipt", () => {
  it("an accepted append answers 201 {receipt}: keys, the steps mirrored with keys, the deliverable, revision + 1, resolution tokens", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    const answer = await append(id, {
      steps: [
        { tool: { name: "lint", input: { path: "src" } } },
        { ask: { prompt: "Ship it?", options: ["yes", "no"] } }
      ]
    })
    expect(answer.status).toBe(201)
    const receipt = answer.body.receipt
    expect(receipt).toMatchObject({
      accepted_task_keys: ["s2-tool-1", "s2-ask-1"],
      deliverable_task_key: "s2-ask-1",
      revision: 2
    })
    expect(receipt.steps).toEqual([
      { tool: { name: "lint", input: { path: "src" }, key: "s2-tool-1" } },
      { ask: { prompt: "Ship it?", options: ["yes", "no"], key: "s2-ask-1" } }
    ])
    expect(Object.keys(receipt.resolution_tokens)).toEqual(["s2-ask-1"])
    expect(receipt.resolution_tokens["s2-ask-1"]).toEqual(expect.any(String))
    const run = await trace(id)
    expect(run.deliverable_task_key).toBe("s2-ask-1")
    expect(run.tasks.map((each: { key: string }) => each.key)).toEqual(["s1-tool-1", "s2-tool-1", "s2-ask-1"])
    expect(await revisionOf(id)).toBe(2)
    const next = await append(id, { steps: [{ tool: { name: "grep", key: "third" } }], expected_revision: 2 })
    expect(next.body.receipt).toMatchObject({ accepted_task_keys: ["third"], revision: 3, resolution_tokens: {} })
  })

  it("a race is mirrored as {parallel, key} with its members keyed, and its join task is the deliverable", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    const answer = await append(id, {
      steps: [{ parallel: [{ tool: { name: "grep" } }, { tool: { name: "lint" } }], until: "any" }]
    })
    expect(answer.status).toBe(201)
    const receipt = answer.body.receipt
    const [race] = receipt.steps
    expect(race).toMatchObject({
      parallel: [{ tool: { name: "grep", key: "s2-tool-1" } }, { tool: { name: "lint", key: "s2-tool-2" } }],
      key: expect.any(String)
    })
    expect(receipt.deliverable_task_key).toBe(race.key)
    expect(receipt.accepted_task_keys).toEqual(expect.arrayContaining(["s2-tool-1", "s2-tool-2", race.key]))
  })

  it("an envelope's first step waits on the run's current deliverable (a structural edge)", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    await append(id, { steps: [{ tool: { name: "lint" } }, { tool: { name: "grep" } }] })
    const first = await task(id, "s2-tool-1")
    expect(first).toMatchObject({ after: ["s1-tool-1"], status: "waiting", waiting_on: ["s1-tool-1"] })
    const graph = (await calls.call("GET", `/${id}/graph`)).body
    expect(graph.edges).toEqual(
      expect.arrayContaining([
        { from: "s1-tool-1", to: "s2-tool-1", structural: true },
        { from: "s2-tool-1", to: "s2-tool-2", structural: true }
      ])
    )
    await calls.call("POST", `/${id}/start`)
    expect((await task(id, "s2-tool-1")).status).toBe("waiting")
    await settle(id, "s1-tool-1")
    expect((await task(id, "s2-tool-1")).status).toBe("dispatched")
  })
})

describe("Append idempotency", () => {
  it("the same key and body replays the original receipt (Idempotency-Replayed) without a new revision", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    const body = { steps: [{ ask: { prompt: "Again?" } }] }
    const first = await append(id, body, "replayed-append")
    const replay = await append(id, body, "replayed-append")
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body).toEqual(first.body)
    expect(await revisionOf(id)).toBe(2)
  })

  it("the same key with another body is 409 idempotency_envelope_mismatch", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    await append(id, { steps: [{ tool: { name: "grep" } }] }, "mismatched-append")
    const other = await append(id, { steps: [{ tool: { name: "lint" } }] }, "mismatched-append")
    expect([other.status, other.body.error.code]).toEqual([409, "idempotency_envelope_mismatch"])
    expect(await revisionOf(id)).toBe(2)
  })

  it("a blank key is 400 idempotency_key_required; one over 36 bytes 400 parameter_invalid", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    const body = { steps: [{ tool: { name: "grep" } }] }
    const blank = await calls.call("POST", `/${id}/tasks`, body)
    expect([blank.status, blank.body.error.code]).toEqual([400, "idempotency_key_required"])
    const long = await append(id, body, "k".repeat(37))
    expect([long.status, long.body.error.code]).toEqual([400, "parameter_invalid"])
  })
})

describe("Append refusals, in order", () => {
  it("run_not_appendable: a completed run", async () => {
    const id = await completedRun()
    await refused(id, { steps: [{ tool: { name: "grep" } }] }, 409, "run_not_appendable")
  })

  it("run_not_appendable: a canceled run", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    expect((await calls.call("POST", `/${id}/stop`)).body.run.status).toBe("canceled")
    await refused(id, { steps: [{ tool: { name: "grep" } }] }, 409, "run_not_appendable")
  })

  it("stale_revision carries current_revision and is judged before tip_live", async () => {
    const id = await created([echo("seed")])
    const stale = await refused(id, { steps: [echo("more")], expected_revision: 4 }, 409, "stale_revision")
    expect(stale.body.error.current_revision).toBe(1)
  })

  it("stale_revision is judged before step faults", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    const stale = await refused(id, { steps: [{ tool: {} }], expected_revision: 2 }, 409, "stale_revision")
    expect(stale.body.error.current_revision).toBe(1)
  })

  it("an expected_revision that is no integer is 400 parameter_invalid, never an unfenced append; null is no fence", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    for (const fence of ["1", "7", 1.5, true, { revision: 1 }]) {
      await refused(id, { steps: [{ tool: { name: "lint" } }], expected_revision: fence }, 400, "parameter_invalid")
    }
    expect(await revisionOf(id)).toBe(1)
    const unfenced = await append(id, { steps: [{ tool: { name: "lint" } }], expected_revision: null })
    expect(unfenced.body.receipt).toMatchObject({ revision: 2 })
  })

  it("run_not_appendable is judged before a malformed expected_revision", async () => {
    const id = await completedRun()
    await refused(id, { steps: [{ tool: { name: "grep" } }], expected_revision: "1" }, 409, "run_not_appendable")
  })

  it("tip_live: a top-level model step while the mainline tip waits; a tool step is accepted", async () => {
    const id = await created([echo("seed")])
    await refused(id, { steps: [echo("next")] }, 409, "tip_live")
    expect((await append(id, { steps: [{ tool: { name: "grep" } }] })).status).toBe(201)
  })

  it("tip_unresolved: a failed deliverable refuses until a retry makes it unsettled again", async () => {
    const id = await failedDeliverable()
    await refused(id, { steps: [{ tool: { name: "lint" } }] }, 409, "tip_unresolved")
    expect((await calls.call("POST", `/${id}/tasks/s1-tool-1/retry`, {})).body.task.status).toBe("dispatched")
    expect((await append(id, { steps: [{ tool: { name: "lint" } }] })).status).toBe(201)
  })

  it("duplicate_task_key: a key already in the run, or twice in the envelope", async () => {
    const id = await created([{ tool: { name: "grep", key: "mine" } }])
    await refused(id, { steps: [{ tool: { name: "lint", key: "mine" } }] }, 409, "duplicate_task_key")
    await refused(
      id,
      { steps: [{ tool: { name: "lint", key: "twice" } }, { tool: { name: "grep", key: "twice" } }] },
      409,
      "duplicate_task_key"
    )
  })

  it("duplicate_task_key is judged before resolve entries", async () => {
    const id = await created([{ tool: { name: "grep", key: "mine" } }])
    await refused(
      id,
      { steps: [{ tool: { name: "lint", key: "mine" } }], resolve: ["nope"] },
      409,
      "duplicate_task_key"
    )
  })

  it("resolve entries: unknown_await for an unknown key or a task that is not an authored ask", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    await refused(id, { steps: [{ tool: { name: "lint" } }], resolve: ["nope"] }, 422, "unknown_await")
    await refused(id, { steps: [{ tool: { name: "lint" } }], resolve: [{ task: "s1-tool-1" }] }, 422, "unknown_await")
    expect(await revisionOf(id)).toBe(1)
  })

  it("resolve entries: await_not_resolvable for an ask that is not open", async () => {
    const id = await created([{ ask: { prompt: "Later?" } }])
    await refused(id, { steps: [{ tool: { name: "lint" } }], resolve: ["s1-ask-1"] }, 422, "await_not_resolvable")
    expect((await task(id, "s1-ask-1")).status).toBe("waiting")
  })

  it("resolve entries: unsupported_resolve_outcome for {task, outcome ≠ completed}; the ask stays open", async () => {
    const id = await created([{ ask: { prompt: "Go?" } }])
    await calls.call("POST", `/${id}/start`)
    await refused(
      id,
      { steps: [{ tool: { name: "lint" } }], resolve: [{ task: "s1-ask-1", outcome: "failed" }] },
      422,
      "unsupported_resolve_outcome"
    )
    expect((await task(id, "s1-ask-1")).status).toBe("dispatched")
    expect(await revisionOf(id)).toBe(1)
  })

  it("resolve entries are judged in order, each as unknown_await, then await_not_resolvable, then its outcome", async () => {
    const id = await created([{ ask: { prompt: "First?", key: "open" } }, { ask: { prompt: "Then?", key: "later" } }])
    await calls.call("POST", `/${id}/start`)
    const steps = [{ tool: { name: "lint" } }]
    await refused(id, { steps, resolve: [{ task: "nope", outcome: "failed" }] }, 422, "unknown_await")
    await refused(id, { steps, resolve: [{ task: "later", outcome: "failed" }] }, 422, "await_not_resolvable")
    await refused(id, { steps, resolve: ["nope", { task: "open", outcome: "failed" }] }, 422, "unknown_await")
    await refused(id, { steps, resolve: ["open", { task: "nope" }] }, 422, "unknown_await")
    expect((await task(id, "open")).status).toBe("dispatched")
    expect(await revisionOf(id)).toBe(1)
  })
})

describe("Append on a run that needs attention", () => {
  it("an accepted append on a needs_attention run returns it to running; resolved asks complete with their content", async () => {
    const id = await created([{ ask: { prompt: "Proceed?" } }])
    await calls.call("POST", `/${id}/start`)
    await waitForActorState(server, "run", id, "needs_attention")
    expect((await trace(id)).attention).toEqual({ reason: "awaiting_human", blocked_task_keys: ["s1-ask-1"] })
    const answer = await append(id, {
      steps: [{ tool: { name: "grep" } }],
      resolve: [{ task: "s1-ask-1", content: "go ahead" }]
    })
    expect(answer.status).toBe(201)
    const run = await trace(id)
    expect(run.status).toBe("running")
    expect(run.attention).toBeNull()
    expect(run.tasks.find((each: { key: string }) => each.key === "s1-ask-1").status).toBe("completed")
    expect(run.tasks.find((each: { key: string }) => each.key === "s2-tool-1")).toMatchObject({
      status: "dispatched",
      after: ["s1-ask-1"]
    })
    expect((await calls.call("GET", `/${id}/tasks/s1-ask-1`)).body.task.output).toBe("go ahead")
    await settle(id, "s2-tool-1")
    await waitForActorState(server, "run", id, "completed")
  })
})

// The supplement judges run_not_appendable → stale_revision → tip_live → tip_unresolved → step
// faults and duplicate keys → resolve entries: the run's own checks before the steps.
describe("append: the run's checks come before the steps'", () => {
  it("run_not_appendable is judged before stale_revision", async () => {
    const id = await completedRun()
    await refused(id, { steps: [{ tool: { name: "grep" } }], expected_revision: 7 }, 409, "run_not_appendable")
  })

  it("run_not_appendable is judged before step faults", async () => {
    const id = await completedRun()
    await refused(id, { steps: [{ tool: {} }] }, 409, "run_not_appendable")
  })

  it("run_not_appendable is judged before resolve entries", async () => {
    const id = await created([{ tool: { name: "grep" } }])
    await calls.call("POST", `/${id}/stop`)
    await refused(
      id,
      { steps: [{ tool: { name: "lint" } }], resolve: [{ task: "x", outcome: "failed" }] },
      409,
      "run_not_appendable"
    )
  })

  it("tip_live is judged before step faults", async () => {
    const id = await created([echo("seed")])
    await refused(
      id,
      { steps: [{ model: { prompt: "x", model: { model: "local/echo" }, bogus: true } }] },
      409,
      "tip_live"
    )
  })

  it("tip_unresolved is judged before duplicate_task_key", async () => {
    const id = await failedDeliverable()
    await refused(id, { steps: [{ tool: { name: "lint", key: "s1-tool-1" } }] }, 409, "tip_unresolved")
  })

  it("tip_unresolved is judged before step faults", async () => {
    const id = await failedDeliverable()
    await refused(id, { steps: [{ tool: {} }] }, 409, "tip_unresolved")
  })

  it("tip_unresolved is judged before resolve entries", async () => {
    const id = await failedDeliverable()
    await refused(
      id,
      { steps: [{ tool: { name: "lint" } }], resolve: [{ task: "x", outcome: "failed" }] },
      409,
      "tip_unresolved"
    )
  })
})
