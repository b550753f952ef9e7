// Commits and deadlines on the executor inbox over HTTP (SUPPLEMENT "Executor plane"; runs
// supplement "Executor inbox" Commit, expiry sweep): the commit's checks in order, the body
// faults in order (first found wins), what an accepted commit keeps, the deadline winning over a
// late commit, and the sweep settling passed deadlines (timed_out or uncertain).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer } from "../../support/http.ts"
import { type AgentRunWorld, agentRunWorld, untilRun } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool, writeTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm } from "../../support/uploads.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let other: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let inbox: ReturnType<typeof inboxCalls>

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("commit-runner", [readOnlyTool("grep"), writeTool("deploy")])
  other = await world.runner("other-runner", [readOnlyTool("grep"), writeTool("deploy")])
  calls = memberCalls(server, world)
  inbox = inboxCalls(server, runner.token)
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
  return id
}

const refusal = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

const claimedTask = async (steps: ReadonlyArray<unknown> = [{ tool: { name: "grep" } }]) => {
  const id = await started(steps)
  const claim = await inbox.claim(id, "s1-tool-1")
  expect(claim.status).toBe(200)
  return { id, token: claim.body.claim.claim_token as string }
}

const taskOf = async (id: string, key: string) =>
  (await calls.call("GET", `/${id}`)).body.run.tasks.find((each: { key: string }) => each.key === key)

/** A result file uploaded at the executor door as `token`; answers its public id. */
const uploadAs = async (token: string) => {
  const form = fileForm("a,b\n1,2\n", "result.csv", "text/csv")
  const response = await fetch(`${server.baseUrl}/agent_api/v1/executor/uploads`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": form.contentType },
    body: form.body
  })
  expect(response.status).toBe(201)
  return ((await response.json()) as { upload: { public_id: string } }).upload.public_id
}

describe("Commit answers", () => {
  it("the task row the run's read shows right after: completed, failed, and a late commit's settled row", async () => {
    const done = await claimedTask()
    const completed = await inbox.commit(done.id, "s1-tool-1", { claim_token: done.token, content: "ok" })
    expect(completed.status).toBe(200)
    expect(completed.body.task).toEqual(await taskOf(done.id, "s1-tool-1"))
    const again = await inbox.commit(done.id, "s1-tool-1", { claim_token: done.token, content: "ok" })
    expect(again.body.task).toEqual(await taskOf(done.id, "s1-tool-1"))
    const broken = await claimedTask()
    const failed = await inbox.commit(broken.id, "s1-tool-1", {
      claim_token: broken.token,
      outcome: "failed",
      content: "no"
    })
    expect(failed.status).toBe(200)
    expect(failed.body.task).toEqual(await taskOf(broken.id, "s1-tool-1"))
  })

  it("a race's winning commit answers its own row, not the claimed sibling the same step settles", async () => {
    const id = await started([{ parallel: [{ tool: { name: "grep" } }, { tool: { name: "deploy" } }], until: "any" }])
    const first = await inbox.claim(id, "s1-tool-1")
    const second = await inbox.claim(id, "s1-tool-2")
    expect([first.status, second.status]).toEqual([200, 200])
    const won = await inbox.commit(id, "s1-tool-2", { claim_token: second.body.claim.claim_token, content: "ok" })
    expect(won.status).toBe(200)
    expect(won.body.task).toEqual(await taskOf(id, "s1-tool-2"))
    expect(won.body.task.key).toBe("s1-tool-2")
    // The sibling the same step settled still names its claimant: the step wrote two claimed rows.
    expect(await taskOf(id, "s1-tool-1")).toMatchObject({ status: "canceled", claimed_by: expect.any(Object) })
  })
})

describe("Commit checks, in order", () => {
  it("404 for an unknown run or task; not_addressed_here before a missing claim_token", async () => {
    const { id } = await claimedTask()
    expect(refusal(await inbox.commit("0190a4c5-0000-7000-8000-000000000000", "s1-tool-1", { content: "x" }))).toEqual([
      404,
      "not_found"
    ])
    expect(refusal(await inbox.commit(id, "nope", { content: "x" }))).toEqual([404, "not_found"])
    expect(refusal(await inboxCalls(server, other.token).commit(id, "s1-tool-1", { content: "x" }))).toEqual([
      409,
      "not_addressed_here"
    ])
  })

  it("not_claimable_kind (an ask row) before a missing claim_token", async () => {
    const id = await started([{ ask: { prompt: "Commit me?" } }])
    expect(refusal(await inboxCalls(server, world.application.token).commit(id, "s1-ask-1", { content: "x" }))).toEqual(
      [409, "not_claimable_kind"]
    )
  })

  it("400 parameter_missing without claim_token, before body faults", async () => {
    const { id } = await claimedTask()
    expect(refusal(await inbox.commit(id, "s1-tool-1", { content: 42 }))).toEqual([400, "parameter_missing"])
  })

  it("409 not_claimant for a never-claimed task or a wrong token, before body faults", async () => {
    const id = await started([{ tool: { name: "grep" } }])
    expect(refusal(await inbox.commit(id, "s1-tool-1", { claim_token: "t", content: "x" }))).toEqual([
      409,
      "not_claimant"
    ])
    await inbox.claim(id, "s1-tool-1")
    expect(refusal(await inbox.commit(id, "s1-tool-1", { claim_token: "wrong", content: 42 }))).toEqual([
      409,
      "not_claimant"
    ])
  })

  it("an older generation's token is 409 not_claimant after a retry", async () => {
    const id = await started([{ tool: { name: "grep", on_failure: "halt" } }])
    const first = (await inbox.claim(id, "s1-tool-1")).body.claim.claim_token
    await inbox.commit(id, "s1-tool-1", { claim_token: first, content: "bad", outcome: "failed" })
    await waitForActorState(server, "run", id, "needs_attention")
    await calls.call("POST", `/${id}/tasks/s1-tool-1/retry`, {})
    expect(refusal(await inbox.commit(id, "s1-tool-1", { claim_token: first, content: "late" }))).toEqual([
      409,
      "not_claimant"
    ])
    const second = (await inbox.claim(id, "s1-tool-1")).body.claim.claim_token
    expect((await inbox.commit(id, "s1-tool-1", { claim_token: second, content: "good" })).status).toBe(200)
  })

  it("the same commit replayed after settling answers 200 with the task unchanged", async () => {
    const { id, token } = await claimedTask()
    const first = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "first" })
    expect(first.body.task).toMatchObject({ key: "s1-tool-1", status: "completed" })
    const again = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "second", outcome: "failed" })
    expect(again.status).toBe(200)
    expect(again.body.task).toMatchObject({ key: "s1-tool-1", status: "completed" })
    expect((await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task.output).toBe("first")
  })

  it("a task canceled by the kernel while claimed answers its claimant's commit 200 unchanged", async () => {
    const { id, token } = await claimedTask([{ tool: { name: "grep" } }, { tool: { name: "grep" } }])
    await calls.call("POST", `/${id}/tasks/s1-tool-1/cancel`, {})
    const late = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "late" })
    expect(late.status).toBe(200)
    expect(late.body.task).toMatchObject({ key: "s1-tool-1", status: "canceled" })
  })
})

describe("Commit body faults, first found wins", () => {
  const cases: ReadonlyArray<readonly [string, Record<string, unknown>, number, string]> = [
    ["content missing", {}, 422, "invalid_content"],
    ["content neither a string nor a list", { content: 42 }, 422, "invalid_content"],
    ["a text block without text", { content: [{ type: "text" }] }, 422, "invalid_content"],
    ["a link without name", { content: [{ type: "resource_link", uri: "svc://uploads/x" }] }, 422, "invalid_content"],
    ["a block type outside the vocabulary", { content: [{ type: "image", data: "AA==" }] }, 422, "validation_failed"],
    [
      "more than 256 blocks",
      { content: Array.from({ length: 257 }, () => ({ type: "text", text: "x" })) },
      422,
      "too_many_content_blocks"
    ],
    [
      "a link that is not svc://uploads/<id>",
      { content: [{ type: "resource_link", uri: "https://example.com/x", name: "x" }] },
      422,
      "unknown_result_upload"
    ],
    ["an unknown outcome", { content: "x", outcome: "maybe" }, 422, "validation_failed"],
    ["is_error not a boolean", { content: "x", is_error: "yes" }, 422, "validation_failed"],
    ["title not a string", { content: "x", title: 5 }, 422, "invalid_title"],
    ["title over 255 characters", { content: "x", title: "t".repeat(256) }, 422, "invalid_title"],
    ["metadata not an object", { content: "x", metadata: [1] }, 422, "invalid_metadata"],
    ["result_type empty", { content: "x", result_type: "" }, 422, "invalid_result_type"],
    ["result_type over 64 characters", { content: "x", result_type: "r".repeat(65) }, 422, "invalid_result_type"],
    ["metadata over 16 KiB", { content: "x", metadata: { blob: "m".repeat(17 * 1024) } }, 413, "content_too_large"],
    ["a result over 1 MB", { content: "c".repeat(1_000_001) }, 413, "content_too_large"],
    // first found wins
    ["invalid_content before invalid_title", { content: 42, title: 5 }, 422, "invalid_content"],
    [
      "a vocabulary fault before too_many_content_blocks",
      { content: [{ type: "image" }, ...Array.from({ length: 257 }, () => ({ type: "text", text: "x" }))] },
      422,
      "validation_failed"
    ],
    [
      "too_many_content_blocks before unknown_result_upload",
      {
        content: [
          { type: "resource_link", uri: "svc://uploads/nope", name: "n" },
          ...Array.from({ length: 256 }, () => ({ type: "text", text: "x" }))
        ]
      },
      422,
      "too_many_content_blocks"
    ],
    [
      "unknown_result_upload before the outcome",
      { content: [{ type: "resource_link", uri: "svc://uploads/nope", name: "n" }], outcome: "maybe" },
      422,
      "unknown_result_upload"
    ],
    ["the outcome before is_error", { content: "x", outcome: "maybe", is_error: "yes" }, 422, "validation_failed"],
    ["is_error before the title", { content: "x", is_error: 1, title: 5 }, 422, "validation_failed"],
    ["the title before metadata", { content: "x", title: 5, metadata: [] }, 422, "invalid_title"],
    ["metadata before result_type", { content: "x", metadata: [], result_type: "" }, 422, "invalid_metadata"],
    [
      "result_type before the size bounds",
      { content: "x", result_type: "", metadata: { blob: "m".repeat(17 * 1024) } },
      422,
      "invalid_result_type"
    ]
  ]

  it("each fault answers its code and leaves the claim live; then a good commit settles it", async () => {
    const { id, token } = await claimedTask()
    for (const [name, body, status, code] of cases) {
      const answer = await inbox.commit(id, "s1-tool-1", { claim_token: token, ...body })
      expect([name, ...refusal(answer)]).toEqual([name, status, code])
    }
    expect((await taskOf(id, "s1-tool-1")).status).toBe("dispatched")
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: true } })
    expect((await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "fine" })).status).toBe(200)
  })

  it("a vocabulary fault's message names content; an outcome fault's names outcome", async () => {
    const { id, token } = await claimedTask()
    const block = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: [{ type: "audio" }] })
    expect(block.body.error.message).toContain("content")
    const outcome = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "x", outcome: "x" })
    expect(outcome.body.error.message).toContain("outcome")
  })

  it("a link to another executor's upload is 422 unknown_result_upload; its own upload is accepted", async () => {
    const { id, token } = await claimedTask()
    const foreign = await uploadAs(other.token)
    const own = await uploadAs(runner.token)
    const link = (upload: string) => ({ type: "resource_link", uri: `svc://uploads/${upload}`, name: "result.csv" })
    expect(refusal(await inbox.commit(id, "s1-tool-1", { claim_token: token, content: [link(foreign)] }))).toEqual([
      422,
      "unknown_result_upload"
    ])
    const accepted = await inbox.commit(id, "s1-tool-1", {
      claim_token: token,
      content: [
        { type: "text", text: "see file" },
        { ...link(own), title: "Result", description: "the csv" }
      ]
    })
    expect(accepted.status).toBe(200)
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read.content).toEqual([
      { type: "text", text: "see file" },
      {
        type: "resource_link",
        uri: `svc://uploads/${own}`,
        name: "result.csv",
        title: "Result",
        description: "the csv"
      }
    ])
  })
})

describe("What a commit keeps", () => {
  it("Claimed task: claimed --commit, token matches--> settled: 200 {task}; the task read shows output (text blocks joined by \\n), content, is_error, title, metadata, result_type, structured_content", async () => {
    const { id, token } = await claimedTask()
    expect(refusal(await inbox.commit(id, "s1-tool-1", { claim_token: `${token}x`, content: "x" }))).toEqual([
      409,
      "not_claimant"
    ])
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: true } })
    const committed = await inbox.commit(id, "s1-tool-1", {
      claim_token: token,
      content: [
        { type: "text", text: "line one" },
        { type: "text", text: "line two" }
      ],
      structured_content: { hits: 2 },
      is_error: true,
      title: "Grep",
      metadata: { checkpoint: "abc" },
      result_type: "grep.hits"
    })
    expect(committed.status).toBe(200)
    expect(committed.body.task).toMatchObject({ key: "s1-tool-1", status: "completed", result: { resolved: true } })
    const read = (await calls.call("GET", `/${id}/tasks/s1-tool-1`)).body.task
    expect(read).toMatchObject({
      output: "line one\nline two",
      output_preview: "line one\nline two",
      content: [
        { type: "text", text: "line one" },
        { type: "text", text: "line two" }
      ],
      structured_content: { hits: 2 },
      is_error: true,
      title: "Grep",
      metadata: { checkpoint: "abc" },
      result_type: "grep.hits"
    })
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: false } })
  })

  it("outcome failed settles the task failed tool_failed", async () => {
    const { id, token } = await claimedTask()
    const failed = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "boom", outcome: "failed" })
    expect(failed.body.task).toMatchObject({ status: "failed", error: { key: "tool_failed" } })
  })

  it("a committed write-kind tool marks the run's runner_effects touched with the commit's checkpoint", async () => {
    const id = await started([{ tool: { name: "deploy" } }])
    const token = (await inbox.claim(id, "s1-tool-1")).body.claim.claim_token
    await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "deployed", metadata: { checkpoint: "v2" } })
    const run = (await calls.call("GET", `/${id}`)).body.run
    expect(run.runner_effects).toEqual({
      status: "touched",
      runners: [
        { runner_executor_public_id: runner.publicId, run_public_id: id, task_key: "s1-tool-1", checkpoint: "v2" }
      ]
    })
  })
})

describe("Deadlines and the expiry sweep", () => {
  const settledAs = (id: string, status: string) =>
    untilRun(server, id, async () => {
      const task = await taskOf(id, "s1-tool-1")
      return task.status === status ? task : undefined
    })

  it("the sweep settles a never-claimed task timed_out tool_timeout within seconds; its row leaves", async () => {
    const id = await started([{ tool: { name: "deploy", timeout_ms: 300 } }])
    expect(await settledAs(id, "timed_out")).toMatchObject({ error: { key: "tool_timeout" } })
    const rows = (await inbox.list()).body.tasks.filter((row: { run_public_id: string }) => row.run_public_id === id)
    expect(rows).toEqual([])
    await waitForActorState(server, "run", id, "needs_attention")
  })

  it("a claimed replayable (read_only) task past its deadline settles timed_out", async () => {
    const { id, token } = await claimedTask([{ tool: { name: "grep", timeout_ms: 300 } }])
    expect(await settledAs(id, "timed_out")).toMatchObject({ error: { key: "tool_timeout" } })
    expect((await inbox.check(id, "s1-tool-1", token)).body).toEqual({ claim: { active: false } })
  })

  it("a claimed write task past its deadline settles uncertain tool_uncertain", async () => {
    const { id } = await claimedTask([{ tool: { name: "deploy", timeout_ms: 300 } }])
    expect(await settledAs(id, "uncertain")).toMatchObject({ error: { key: "tool_uncertain" } })
  })
})

// Commit: "deadline passed (whether or not the sweep has run) → settled by the expiry rule, 409
// claim_inactive"; only a commit already made under the token, or a kernel cancel while claimed,
// answers 200 unchanged, before or after the sweep.
describe("commit: the deadline wins, swept or not", () => {
  it("a commit after the sweep settled the task uncertain is 409 claim_inactive", async () => {
    const { id, token } = await claimedTask([{ tool: { name: "deploy", timeout_ms: 300 } }])
    await untilRun(server, id, async () => ((await taskOf(id, "s1-tool-1")).status === "uncertain" ? true : undefined))
    const late = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "too late" })
    expect(refusal(late)).toEqual([409, "claim_inactive"])
  })

  it("a commit after the deadline, before the sweep ran, is 409 claim_inactive and settles the task by the expiry rule", async () => {
    const { id, token } = await claimedTask([{ tool: { name: "deploy", timeout_ms: 60_000 } }])
    server.clock.advance("61 seconds")
    const late = await inbox.commit(id, "s1-tool-1", { claim_token: token, content: "too late" })
    expect(refusal(late)).toEqual([409, "claim_inactive"])
    expect(await taskOf(id, "s1-tool-1")).toMatchObject({ status: "uncertain", error: { key: "tool_uncertain" } })
  })
})
