// Attachment reads under a claim (spec "Executor plane": GET …/attachments/{upload_public_id} and
// …/bytes, header Claim-Token; runs supplement "Executor inbox"): the claimant reads the
// descriptor and the bytes (Range 206, no-store, never a redirect) of an upload the run binds (named
// by a task's attachments as the creator's own upload, or linked from a committed result); the
// claim check's proof refusals, claim_inactive once settled or past the deadline, and 404 for an
// upload the run does not bind.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { type AgentRunWorld, agentRunWorld } from "../../support/run-agents.ts"
import { inboxCalls, memberCalls, readOnlyTool } from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm } from "../../support/uploads.ts"

let server: TestServer
let world: AgentRunWorld
let runner: { token: string; publicId: string }
let other: { token: string; publicId: string }
let calls: ReturnType<typeof memberCalls>
let inbox: ReturnType<typeof inboxCalls>

const notes = "hello attachments\n"

/** An upload made at `door` with `token`; answers its public id. */
const upload = async (
  door: "/agent_api/v1/uploads" | "/agent_api/v1/executor/uploads",
  token: string,
  data = notes
) => {
  const form = fileForm(data, "notes.txt", "text/plain")
  const response = await fetch(`${server.baseUrl}${door}`, {
    method: "POST",
    headers: { ...bearer(token), "content-type": form.contentType },
    body: form.body
  })
  expect(response.status).toBe(201)
  return ((await response.json()) as { upload: { public_id: string } }).upload.public_id
}

beforeAll(async () => {
  server = await startTestServer()
  world = await agentRunWorld(server)
  runner = await world.runner("attachments-runner", [readOnlyTool("grep")])
  other = await world.runner("attachments-other", [readOnlyTool("grep")])
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
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.run.public_id as string
  expect((await calls.call("POST", `/${id}/start`)).status).toBe(200)
  return id
}

const claimed = async (id: string, key: string) => {
  const answer = await inbox.claim(id, key)
  expect(answer.status, JSON.stringify(answer.body)).toBe(200)
  return answer.body.claim.claim_token as string
}

/** An attachment read as `token` (the executor's), with the Claim-Token `claim` when given. */
const read = (
  id: string,
  key: string,
  uploadId: string,
  claim: string | undefined,
  options: { bytes?: boolean; token?: string; headers?: Record<string, string> } = {}
) =>
  request(
    server.baseUrl,
    "GET",
    `/agent_api/v1/executor/inbox/${id}/${key}/attachments/${uploadId}${options.bytes ? "/bytes" : ""}`,
    {
      headers: {
        ...bearer(options.token ?? runner.token),
        ...(claim === undefined ? {} : { "claim-token": claim }),
        ...options.headers
      }
    }
  )

const refusal = (answer: { status: number; body: any }) => [answer.status, answer.body?.error?.code]

/** A run whose later model step names `attachments`, its first tool task claimed. */
const attachingRun = async (attachments: ReadonlyArray<unknown>) => {
  const id = await started([
    { tool: { name: "grep", key: "look" } },
    { model: { prompt: "Read the notes", model: { model: "local/echo" }, attachments } }
  ])
  return { id, claim: await claimed(id, "look") }
}

describe("an upload a model step attaches", () => {
  it("the claimant reads its descriptor: 200 {upload}", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    const { id, claim } = await attachingRun([bound])
    const answer = await read(id, "look", bound, claim)
    expect(answer.status).toBe(200)
    expect(answer.body.upload).toMatchObject({
      public_id: bound,
      filename: "notes.txt",
      content_type: "text/plain",
      byte_size: Buffer.byteLength(notes)
    })
    expect(answer.body.upload.created_at).toEqual(expect.any(String))
  })

  it("the claimant reads its bytes: 200 whole, a Range 206, Cache-Control no-store, never a redirect", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    // Attachments may name an upload as an object too.
    const { id, claim } = await attachingRun([{ upload_public_id: bound }])
    const whole = await read(id, "look", bound, claim, { bytes: true })
    expect(whole.status).toBe(200)
    expect(whole.text).toBe(notes)
    expect(whole.headers.get("cache-control")).toBe("no-store")
    expect(whole.headers.get("content-type")).toContain("text/plain")
    expect(whole.headers.get("location")).toBeNull()
    const part = await read(id, "look", bound, claim, { bytes: true, headers: { range: "bytes=0-4" } })
    expect(part.status).toBe(206)
    expect(part.text).toBe("hello")
    expect(part.headers.get("content-range")).toBe(`bytes 0-4/${Buffer.byteLength(notes)}`)
    expect(part.headers.get("cache-control")).toBe("no-store")
  })

  it("an upload the run does not bind is 404 not_found: unnamed, not the creator's own, unknown or malformed", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    const unnamed = await upload("/agent_api/v1/uploads", world.agent.token)
    const foreign = await upload("/agent_api/v1/executor/uploads", other.token)
    const { id, claim } = await attachingRun([bound, foreign])
    for (const uploadId of [unnamed, foreign, "0190a4c5-0000-7000-8000-000000000000", "not-an-upload"]) {
      expect(refusal(await read(id, "look", uploadId, claim)), uploadId).toEqual([404, "not_found"])
      expect(refusal(await read(id, "look", uploadId, claim, { bytes: true })), uploadId).toEqual([404, "not_found"])
    }
    expect((await read(id, "look", bound, claim)).status).toBe(200)
  })
})

describe("the proof, in order", () => {
  it("404 for a run or task not found; 400 parameter_missing without Claim-Token; 409 not_claimant for another token or executor", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    const { id, claim } = await attachingRun([bound])
    expect(refusal(await read("0190a4c5-0000-7000-8000-000000000000", "look", bound, claim))).toEqual([
      404,
      "not_found"
    ])
    expect(refusal(await read(id, "nope", bound, claim))).toEqual([404, "not_found"])
    for (const bytes of [false, true]) {
      expect(refusal(await read(id, "look", bound, undefined, { bytes }))).toEqual([400, "parameter_missing"])
      expect(refusal(await read(id, "look", bound, "", { bytes }))).toEqual([400, "parameter_missing"])
      expect(refusal(await read(id, "look", bound, "not-the-token", { bytes }))).toEqual([409, "not_claimant"])
      expect(refusal(await read(id, "look", bound, claim, { bytes, token: other.token }))).toEqual([
        409,
        "not_claimant"
      ])
    }
    // The proof comes before the binding: an unbound upload with a wrong token is not_claimant.
    const unnamed = await upload("/agent_api/v1/uploads", world.agent.token)
    expect(refusal(await read(id, "look", unnamed, "not-the-token"))).toEqual([409, "not_claimant"])
  })

  it("409 claim_inactive once the claim settled, and past its deadline before the sweep settles it", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    const settled = await attachingRun([bound])
    expect((await inbox.commit(settled.id, "look", { claim_token: settled.claim, content: "done" })).status).toBe(200)
    expect(refusal(await read(settled.id, "look", bound, settled.claim))).toEqual([409, "claim_inactive"])
    expect(refusal(await read(settled.id, "look", bound, settled.claim, { bytes: true }))).toEqual([
      409,
      "claim_inactive"
    ])

    const lapsed = await attachingRun([bound])
    // The row's deadline as the projection shows it moved into the past (the sweep has not run).
    await server.run(
      Effect.flatMap(
        SqlClient,
        (sql) => sql`
          UPDATE run_tasks SET deadline_at = now() - interval '1 second'
          WHERE key = 'look' AND run_id = (SELECT id FROM runs WHERE public_id = ${lapsed.id}::uuid)`
      )
    )
    expect(refusal(await read(lapsed.id, "look", bound, lapsed.claim))).toEqual([409, "claim_inactive"])
  })
})

describe("an upload a committed result links", () => {
  it("binds the run once committed: a later task's claimant reads it; before the commit it is 404", async () => {
    const id = await started([{ tool: { name: "grep", key: "first" } }, { tool: { name: "grep", key: "second" } }])
    const first = await claimed(id, "first")
    const result = await upload("/agent_api/v1/executor/uploads", runner.token, "a,b\n1,2\n")
    expect(refusal(await read(id, "first", result, first))).toEqual([404, "not_found"])
    const committed = await inbox.commit(id, "first", {
      claim_token: first,
      content: [{ type: "resource_link", uri: `svc://uploads/${result}`, name: "result.csv" }]
    })
    expect(committed.status, JSON.stringify(committed.body)).toBe(200)
    const second = await claimed(id, "second")
    const answer = await read(id, "second", result, second, { bytes: true })
    expect(answer.status).toBe(200)
    expect(answer.text).toBe("a,b\n1,2\n")
  })
})

// Runs supplement "Executor inbox": deadline_at is shifted by pauses; a paused run's clocks stand
// still, so its claims are frozen, not lapsed, however long the pause.
describe("a claim of a paused run", () => {
  it("reads its attachments past the deadline its row showed before the pause, and one taken while paused too", async () => {
    const bound = await upload("/agent_api/v1/uploads", world.agent.token)
    const id = await started([
      { parallel: [{ tool: { name: "grep", key: "look" } }, { tool: { name: "grep", key: "later" } }] },
      { model: { prompt: "Read the notes", model: { model: "local/echo" }, attachments: [bound] } }
    ])
    const claim = await claimed(id, "look")
    expect((await calls.call("POST", `/${id}/pause`, {})).status).toBe(200)
    server.clock.advance("1 hour")
    expect((await read(id, "look", bound, claim)).status).toBe(200)
    expect((await read(id, "look", bound, claim, { bytes: true })).status).toBe(200)
    const later = await claimed(id, "later")
    expect((await read(id, "later", bound, later)).status).toBe(200)
    expect((await inbox.commit(id, "look", { claim_token: claim, content: "done" })).status).toBe(200)
  })
})
