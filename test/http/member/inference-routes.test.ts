// Member: inference requests, route by route through the real server (spec "Member: inference
// requests", "Inference request replay stream"; inference supplement "Projections and reads",
// "Event items", "Cancellation, DELETE, files, estimate"): the replay's cursors and watermark,
// the list's filter, order and pages, who may write, output files that do not exist, and a run's
// rounds, hidden from every door as from the list.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"

let server: TestServer
let agent: ConnectedAgent
/** Another agent of the same steward: it sees the agent's workspace, which is dedicated to the agent. */
let sibling: ConnectedAgent
let workspaceId: string
let keys = 0

const call = (
  method: string,
  path: string,
  token = agent.token,
  body?: unknown,
  headers: Record<string, string> = {}
) => request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

const collection = (workspace = workspaceId) => `/workspaces/${workspace}/inference_requests`

const create = (members: Record<string, unknown>, token = agent.token, workspace = workspaceId) =>
  call("POST", collection(workspace), token, { inference_request: members }, { "idempotency-key": `routes-${++keys}` })

const echo = (input: string) => ({ workload: "text_generation", model: { model: "local/echo" }, input })

const expectError = (response: JsonResponse, status: number, code: string) =>
  expect([response.status, response.body?.error?.code]).toEqual([status, code])

/** Creates a request and waits until it reaches `state`; answers its public id. */
const settledRequest = async (members: Record<string, unknown>, state = "completed") => {
  const created = await create(members)
  expect(created.status).toBe(202)
  const id = created.body.inference_request.public_id as string
  await waitForActorState(server, "inferenceRequest", id, state)
  return id
}

const newWorkspace = async (name: string) =>
  (await call("POST", "/workspaces", agent.token, { workspace: { name } }, { "idempotency-key": `ws-${name}` })).body
    .workspace

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["routes-agent", "routes-sibling"], member: [] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  workspaceId = (await newWorkspace("inference routes")).public_id
})
afterAll(() => server?.close())

describe("GET …/inference_requests/{id}/events", () => {
  it("pages by cursor with the watermark on every page; an empty page's next_after is null", async () => {
    const id = await settledRequest(echo("one two three"))
    const events = (query: string) => call("GET", `${collection()}/${id}/events${query}`)
    const whole = (await events("")).body
    const total = whole.events.length
    expect(whole.pagination).toEqual({ next_after: whole.events.at(-1).cursor, watermark: total })
    const first = (await events("?limit=3")).body
    expect(first.events.map((item: any) => item.sequence)).toEqual([1, 2, 3])
    expect(first.pagination).toEqual({ next_after: first.events[2].cursor, watermark: total })
    const rest = (await events(`?after=${first.pagination.next_after}`)).body
    expect(rest.events.map((item: any) => item.sequence)).toEqual(
      Array.from({ length: total - 3 }, (_, index) => index + 4)
    )
    expect(rest.pagination.watermark).toBe(total)
    const drained = (await events(`?after=${rest.pagination.next_after}`)).body
    expect(drained).toEqual({ events: [], pagination: { next_after: null, watermark: total } })
    expect((await events("?after=")).body.events).toHaveLength(total)
    const item = whole.events[0]
    expect(item).toEqual({
      public_id: expect.any(String),
      sequence: 1,
      cursor: expect.any(String),
      type: "run_status",
      resource: { type: "inference_request", public_id: id },
      occurred_at: expect.any(String),
      payload: expect.objectContaining({ status: "queued", model: "local/echo", attempt: 1 })
    })
  })

  it("a malformed cursor, or another request's, is 400 parameter_invalid", async () => {
    const mine = await settledRequest(echo("mine"))
    const other = await settledRequest(echo("other words here"))
    const otherCursor = (await call("GET", `${collection()}/${other}/events?limit=2`)).body.pagination.next_after
    expect(otherCursor).toEqual(expect.any(String))
    expectError(await call("GET", `${collection()}/${mine}/events?after=${otherCursor}`), 400, "parameter_invalid")
    expectError(await call("GET", `${collection()}/${mine}/events?after=not-a-cursor`), 400, "parameter_invalid")
  })
})

describe("GET …/inference_requests", () => {
  it("lists summaries by public id, asc by default or desc, in pages; workload filters; an unknown workload is 400", async () => {
    const room = (await newWorkspace("listing")).public_id
    const made: Array<string> = []
    for (const members of [
      echo("a"),
      { workload: "embedding", model: { model: "local/embed" }, input: "b" },
      echo("c")
    ]) {
      const created = await create(members, agent.token, room)
      expect(created.status).toBe(202)
      made.push(created.body.inference_request.public_id)
    }
    const sorted = [...made].sort()
    const list = (query: string) => call("GET", `${collection(room)}${query}`)
    const ids = (response: JsonResponse) => response.body.inference_requests.map((row: any) => row.public_id)
    expect(ids(await list(""))).toEqual(sorted)
    expect(ids(await list("?order=desc"))).toEqual([...sorted].reverse())
    const row = (await list("")).body.inference_requests[0]
    expect(Object.keys(row).sort()).toEqual(
      ["billing_subject", "created_at", "model", "public_id", "status", "updated_at", "workload"].sort()
    )
    const embedded = await list("?workload=embedding")
    expect(embedded.body.inference_requests.map((each: any) => each.workload)).toEqual(["embedding"])
    expect(ids(await list("?workload=text_generation"))).toEqual(sorted.filter((id) => id !== ids(embedded)[0]))
    const first = await list("?limit=2")
    expect(ids(first)).toEqual(sorted.slice(0, 2))
    const second = await list(`?limit=2&after=${first.body.pagination.next_after}`)
    expect(ids(second)).toEqual(sorted.slice(2))
    expect(second.body.pagination.next_after).toBeNull()
    expectError(await list(`?order=desc&after=${first.body.pagination.next_after}`), 400, "parameter_invalid")
    expectError(await list("?workload=chat"), 400, "parameter_invalid")
    expectError(await list("?limit=101"), 400, "parameter_invalid")
  })
})

describe("who may write", () => {
  it("create, cancellation and DELETE need write standing; the fenced agent still reads", async () => {
    const id = await settledRequest(echo("fenced"))
    const path = `${collection()}/${id}`
    expectError(await create(echo("not mine"), sibling.token), 403, "workspace_agent_identifier_mismatch")
    expectError(await call("POST", `${path}/cancellation`, sibling.token), 403, "workspace_agent_identifier_mismatch")
    expectError(await call("DELETE", path, sibling.token), 403, "workspace_agent_identifier_mismatch")
    expect((await call("GET", path, sibling.token)).body.inference_request.public_id).toBe(id)
    expect((await call("GET", `${path}/events`, sibling.token)).status).toBe(200)
    expect((await call("GET", collection(), sibling.token)).status).toBe(200)
    const estimate = await call("POST", `${collection()}/input_estimate`, sibling.token, { input_estimate: echo("hi") })
    expect(estimate.status).toBe(200)
  })

  it("an archived workspace answers 409 workspace_not_active to writes; reads still serve", async () => {
    const room = await newWorkspace("archived inference")
    const created = await create(echo("before"), agent.token, room.public_id)
    const id = created.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", id, "completed")
    const archival = await call("POST", `/workspaces/${room.public_id}/archival`, agent.token, {
      command: { lock_version: room.lock_version }
    })
    expect(archival.status).toBe(200)
    await waitForActorState(server, "workspace", room.public_id, "archived")
    const path = `${collection(room.public_id)}/${id}`
    expectError(await create(echo("after"), agent.token, room.public_id), 409, "workspace_not_active")
    expectError(await call("POST", `${path}/cancellation`), 409, "workspace_not_active")
    expectError(await call("DELETE", path), 409, "workspace_not_active")
    expect((await call("GET", path)).body.inference_request.status).toBe("completed")
  })
})

describe("a run's rounds", () => {
  it("are hidden from every inference request door, as from the list: 404, and the round runs on", async () => {
    const run = await call(
      "POST",
      `/workspaces/${workspaceId}/runs`,
      agent.token,
      {
        run: {
          approval_mode: "bypass",
          steps: [{ model: { prompt: JSON.stringify({ delay_ms: 60_000 }), model: { model: "local/script" } } }]
        }
      },
      { "idempotency-key": "hidden-round-run" }
    )
    expect(run.status).toBe(201)
    const runId = run.body.run.public_id as string
    const started = await call("POST", `/workspaces/${workspaceId}/runs/${runId}/start`)
    expect(started.status).toBe(200)
    const roundOf = () =>
      server.run(
        Effect.flatMap(
          SqlClient,
          (sql) => sql<{ readonly public_id: string }>`
            SELECT q.public_id::text FROM inference_requests q JOIN runs r ON r.id = q.asked_by_run_id
            WHERE r.public_id = ${runId}::uuid`
        )
      )
    await waitForSteps(server, async () => (await roundOf()).length > 0, { kind: "inferenceRequest" })
    const round = (await roundOf())[0]!.public_id
    await waitForActorState(server, "inferenceRequest", round, "live.running")
    const path = `${collection()}/${round}`
    expectError(await call("GET", path), 404, "not_found")
    expectError(await call("GET", `${path}/events`), 404, "not_found")
    expectError(await call("GET", `${path}/files/0`), 404, "not_found")
    expectError(await call("POST", `${path}/cancellation`), 404, "not_found")
    expectError(await call("DELETE", path), 404, "not_found")
    expect((await call("GET", collection())).body.inference_requests.map((row: any) => row.public_id)).not.toContain(
      round
    )
    const task = await call("GET", `/workspaces/${workspaceId}/runs/${runId}/tasks/s1-model-1`)
    expect(task.body.task.status).toBe("running")
    expect((await call("POST", `/workspaces/${workspaceId}/runs/${runId}/stop`)).status).toBe(200)
  })
})

describe("GET …/inference_requests/{id}/files/{index}", () => {
  it("a request still running, and one without files, answer 404 not_found", async () => {
    const slow = await create({
      workload: "text_generation",
      model: { model: "local/script" },
      input: JSON.stringify({ delay_ms: 60_000 })
    })
    const slowId = slow.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", slowId, "live.running")
    expectError(await call("GET", `${collection()}/${slowId}/files/0`), 404, "not_found")
    await call("POST", `${collection()}/${slowId}/cancellation`)
    const text = await settledRequest(echo("no files"))
    expectError(await call("GET", `${collection()}/${text}/files/0`), 404, "not_found")
  })

  it("a speech request's file is speech-1.wav, audio/wav, as an attachment", async () => {
    const id = await settledRequest({
      workload: "speech_generation",
      model: { model: "local/speech" },
      input: "two words"
    })
    const file = await fetch(`${server.baseUrl}/agent_api/v1${collection()}/${id}/files/0`, {
      headers: bearer(agent.token)
    })
    expect(file.status).toBe(200)
    expect(file.headers.get("content-type")).toBe("audio/wav")
    expect(file.headers.get("content-disposition")).toBe("attachment; filename=speech-1.wav")
    expect((await file.arrayBuffer()).byteLength).toBe(44 + 3200 * 2)
  })
})
