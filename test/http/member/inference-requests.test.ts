// Member: inference requests through the real server on the local provider: the lifecycle rows of
// "States and transitions" (start, finish, retryable failure, refusal falling back, cancellation,
// DELETE), the replay stream's items in order with contiguous sequences, and the create body's
// refusals.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { waitForActorState } from "../../support/actors.ts"
import { callerKey, spend, startOfWindow } from "../../support/budget.ts"
import { bearer, request } from "../../support/http.ts"
import type { ConnectedAgent } from "../../support/members.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let agent: ConnectedAgent
/** Another agent of the same steward (it sees the owner's private workspace). */
let sibling: ConnectedAgent
/** An agent of another human of the account (it does not). */
let outsider: ConnectedAgent
let workspaceId: string
let keys = 0
const absentUpload = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(agent.token), ...headers },
    body
  })

const requests = () => `/workspaces/${workspaceId}/inference_requests`

const create = (members: Record<string, unknown>, key = `inference-${++keys}`) =>
  call("POST", requests(), { inference_request: members }, { "idempotency-key": key })

const text = (model: string, input: unknown, more: Record<string, unknown> = {}) =>
  create({ workload: "text_generation", model: { model }, input, ...more })

const settled = async (id: string, state: string) => {
  await waitForActorState(server, "inferenceRequest", id, state)
  return (await call("GET", `${requests()}/${id}`)).body.inference_request
}

const events = async (id: string) => (await call("GET", `${requests()}/${id}/events?limit=200`)).body

/** The items as `type(detail)` for comparing orders. */
const shapes = (items: ReadonlyArray<any>) =>
  items.map((item) => {
    const p = item.payload
    switch (item.type) {
      case "run_status":
        return `run_status(${p.status},${p.model},${p.attempt}${p.model_change ? ",change" : ""})`
      case "rollback":
        return `rollback(${p.reason},${p.attempt})`
      case "usage":
        return `usage(${p.attempt})`
      case "text_delta":
        return `text(${p.text})`
      default:
        return item.type
    }
  })

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, { owner: ["inference-agent", "second-agent"], member: ["outside-agent"] })
  agent = account.ownerAgents[0] as ConnectedAgent
  sibling = account.ownerAgents[1] as ConnectedAgent
  outsider = account.memberAgents[0] as ConnectedAgent
  const made = await call("POST", "/workspaces", { workspace: { name: "inference" } }, { "idempotency-key": "ws-inf" })
  workspaceId = made.body.workspace.public_id
})
afterAll(() => server?.close())

describe("InferenceRequest transitions", () => {
  it("InferenceRequest: queued --start--> running: the show and its replay say so", async () => {
    const created = await text("local/script", JSON.stringify({ delay_ms: 60_000 }))
    expect(created.body.inference_request.status).toBe("queued")
    const id = created.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", id, "live.running")
    const shown = (await call("GET", `${requests()}/${id}`)).body.inference_request
    expect([shown.status, shown.result]).toEqual(["running", undefined])
    expect(shapes((await events(id)).events)).toEqual([
      "run_status(queued,local/script,1)",
      "run_status(running,local/script,1)"
    ])
    expect((await call("POST", `${requests()}/${id}/cancellation`)).body.inference_request.status).toBe("canceled")
  })

  it("InferenceRequest: running --finish--> completed: local/echo streams one word per text_delta, usage, then run_status and result last", async () => {
    const created = await text("local/echo", "hello there")
    expect(created.status).toBe(202)
    expect(created.body.inference_request).toMatchObject({
      status: "queued",
      workload: "text_generation",
      model: { provider_id: "local", model_ref: "local/echo", reasoning_enabled: false, reasoning_effort: "medium" },
      usage_summary: { request_count: 0, input_tokens: 0, cost_amount: "0", cost_complete: true }
    })
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.status).toBe("completed")
    expect(done.result).toMatchObject({
      status: "completed",
      output_text: "echo: hello there",
      usage: { input_tokens: 7, output_tokens: 3, total_tokens: 10, cost_amount: "0.000013", cost_complete: true }
    })
    expect(done.usage_summary).toMatchObject({ request_count: 1, input_tokens: 7, output_tokens: 3 })
    const page = await events(id)
    expect(shapes(page.events)).toEqual([
      "run_status(queued,local/echo,1)",
      "run_status(running,local/echo,1)",
      "text(echo:)",
      "text( hello)",
      "text( there)",
      "usage(1)",
      "run_status(completed,local/echo,1)",
      "result"
    ])
    expect(page.events.map((item: any) => item.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    expect(page.pagination.watermark).toBe(8)
    expect(page.events.at(-1).payload.result).toEqual({ status: "completed", inference_request_public_id: id })
  })

  it("the events page holds 100 by default and up to 200; 0 and 201 are 400 parameter_invalid", async () => {
    // local/echo streams one word per text_delta: 150 words make more than 150 items.
    const created = await text("local/echo", Array.from({ length: 150 }, (_, i) => `w${i}`).join(" "))
    const id = created.body.inference_request.public_id
    await settled(id, "completed")
    const page = (query: string) => call("GET", `${requests()}/${id}/events${query}`)
    const first = await page("")
    expect(first.body.events).toHaveLength(100)
    expect(first.body.pagination.next_after).toEqual(expect.any(String))
    const widest = await page("?limit=200")
    expect(widest.body.events.length).toBeGreaterThan(150)
    expect(widest.body.events.length).toBeLessThanOrEqual(200)
    expect((await page("?limit=1")).body.events).toHaveLength(1)
    for (const limit of ["0", "201"]) {
      const refused = await page(`?limit=${limit}`)
      expect([refused.status, refused.body.error.code], limit).toEqual([400, "parameter_invalid"])
    }
  })

  it("InferenceRequest: running --classifier refusal, next permitted candidate exists--> queued on the next route: run_status with model_change", async () => {
    const created = await text("local/script", JSON.stringify({ refuse: "policy" }), {
      fallback_models: ["local/embed", "local/echo"]
    })
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.result.model_change).toEqual({
      from: "local/script",
      to: "local/echo",
      reason: "model_refused",
      category: "policy"
    })
    const page = await events(id)
    expect(shapes(page.events).slice(0, 6)).toEqual([
      "run_status(queued,local/script,1)",
      "run_status(running,local/script,1)",
      "usage(1)",
      "rollback(refused,1)",
      "run_status(queued,local/echo,2,change)",
      "run_status(running,local/echo,2)"
    ])
    const switched = page.events[4].payload
    expect(switched.model_skips).toEqual([{ model: "local/embed", reason: "workload_mismatch" }])
    expect(done.usage_summary.request_count).toBe(2)
  })

  it("InferenceRequest: running --exhausted retryable failure, next permitted candidate exists--> queued on the next route: run_status with model_change", async () => {
    const created = await text("local/script", JSON.stringify({ fail: "provider_error" }), {
      fallback_models: ["local/echo"]
    })
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.result.model_change).toMatchObject({ from: "local/script", to: "local/echo", reason: "provider_error" })
    const page = await events(id)
    expect(shapes(page.events).slice(0, 8)).toEqual([
      "run_status(queued,local/script,1)",
      "run_status(running,local/script,1)",
      "rollback(retry,1)",
      "run_status(queued,local/script,2)",
      "run_status(running,local/script,2)",
      "rollback(retry,2)",
      "run_status(queued,local/echo,3,change)",
      "run_status(running,local/echo,3)"
    ])
    expect(page.events[6].payload.model_change).toMatchObject({ from: "local/script", to: "local/echo" })
  })

  it("InferenceRequest: running --retryable failure, attempts left--> waiting (queued), then running again: backoff 500 ms", async () => {
    const created = await text("local/script", JSON.stringify({ fail: "provider_error", fail_times: 1, reply: "fine" }))
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.result.output_text).toBe("fine")
    const page = await events(id)
    expect(shapes(page.events).slice(0, 4)).toEqual([
      "run_status(queued,local/script,1)",
      "run_status(running,local/script,1)",
      "rollback(retry,1)",
      "run_status(queued,local/script,2)"
    ])
    expect(page.events[3].payload.retry_after_ms).toBe(500)
  })

  it("InferenceRequest: running --finish--> failed: a refusal with no candidate fails model_refused; provider_model_unavailable never retries", async () => {
    const refused = await text("local/script", JSON.stringify({ refuse: true }))
    const failed = await settled(refused.body.inference_request.public_id, "failed")
    expect(failed.result).toMatchObject({
      status: "failed",
      finish_quality: "refused",
      error: { code: "model_refused" }
    })
    const unavailable = await text("local/script", JSON.stringify({ fail: "provider_model_unavailable" }))
    const final = await settled(unavailable.body.inference_request.public_id, "failed")
    expect(final.result.error).toEqual({ code: "provider_model_unavailable" })
    expect(final.usage_summary.request_count).toBe(1)
  })

  it("InferenceRequest: queued or running --cancellation--> canceled: terminal work is unchanged", async () => {
    const created = await text("local/script", JSON.stringify({ delay_ms: 60_000 }))
    const id = created.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", id, "live.running")
    const canceled = await call("POST", `${requests()}/${id}/cancellation`)
    expect(canceled.status).toBe(200)
    expect(canceled.body.inference_request.status).toBe("canceled")
    expect(canceled.body.inference_request.result).toMatchObject({ status: "canceled" })
    const again = await call("POST", `${requests()}/${id}/cancellation`)
    expect(again.body.inference_request).toEqual(canceled.body.inference_request)
    const finished = (await text("local/echo", "done already")).body.inference_request.public_id
    const completed = await settled(finished, "completed")
    const late = await call("POST", `${requests()}/${finished}/cancellation`)
    expect(late.status).toBe(200)
    expect(late.body.inference_request).toEqual(completed)
    expect(shapes((await events(finished)).events).at(-2)).toBe("run_status(completed,local/echo,1)")
  })

  it("InferenceRequest: terminal --DELETE--> tombstoned: running is 409 not_terminal; then every door 404", async () => {
    const created = await text("local/script", JSON.stringify({ delay_ms: 60_000 }))
    const id = created.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", id, "live.running")
    const early = await call("DELETE", `${requests()}/${id}`)
    expect(early.status).toBe(409)
    expect(early.body.error.code).toBe("not_terminal")
    expect((await call("POST", `${requests()}/${id}/cancellation`)).body.inference_request.status).toBe("canceled")
    const removed = await call("DELETE", `${requests()}/${id}`)
    expect(removed.status).toBe(204)
    expect((await call("GET", `${requests()}/${id}`)).status).toBe(404)
    expect((await call("GET", `${requests()}/${id}/events`)).status).toBe(404)
    const listed = await call("GET", requests())
    expect(listed.body.inference_requests.map((row: any) => row.public_id)).not.toContain(id)
  })

  it("a slow provider call holds back no other request (each attempt runs in its own job slot)", async () => {
    const slow = await text("local/script", JSON.stringify({ delay_ms: 60_000 }))
    const slowId = slow.body.inference_request.public_id
    await waitForActorState(server, "inferenceRequest", slowId, "live.running")
    const fast = await text("local/echo", "meanwhile")
    const done = await settled(fast.body.inference_request.public_id, "completed")
    expect(done.result.output_text).toBe("echo: meanwhile")
    expect((await call("POST", `${requests()}/${slowId}/cancellation`)).body.inference_request.status).toBe("canceled")
  })

  it("embeddings answer 16-dimension unit vectors and no output_text", async () => {
    const created = await create({ workload: "embedding", model: { model: "local/embed" }, input: ["a", "b"] })
    const done = await settled(created.body.inference_request.public_id, "completed")
    expect(done.result.output_text).toBeUndefined()
    expect(done.result.embeddings).toHaveLength(2)
    const norm = Math.hypot(...done.result.embeddings[0].vector)
    expect(norm).toBeCloseTo(1, 6)
  })
})

describe("fallback lists", () => {
  it("an omitted list captures the agent's standing one from its configuration; [] disables fallback", async () => {
    await server.run(
      Effect.gen(function* () {
        const sql = yield* SqlClient
        yield* sql`UPDATE users SET configuration = ${JSON.stringify({ fallback_models: ["local/nothing", "local/echo"] })}::jsonb
                   WHERE public_id = ${sibling.publicId}`
      })
    )
    const own = await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
      headers: { ...bearer(sibling.token), "idempotency-key": "ws-sibling" },
      body: { workspace: { name: "sibling's" } }
    })
    const collection = `/agent_api/v1/workspaces/${own.body.workspace.public_id}/inference_requests`
    const asSibling = (members: Record<string, unknown>, key: string) =>
      request(server.baseUrl, "POST", collection, {
        headers: { ...bearer(sibling.token), "idempotency-key": key },
        body: { inference_request: members }
      })
    const refusing = {
      workload: "text_generation",
      model: { model: "local/script" },
      input: JSON.stringify({ refuse: true })
    }
    const standing = await asSibling(refusing, "standing")
    await waitForActorState(server, "inferenceRequest", standing.body.inference_request.public_id, "completed")
    const rescued = (
      await request(server.baseUrl, "GET", `${collection}/${standing.body.inference_request.public_id}`, {
        headers: bearer(sibling.token)
      })
    ).body.inference_request
    expect(rescued.result.model_change).toMatchObject({ from: "local/script", to: "local/echo" })
    const none = await asSibling({ ...refusing, fallback_models: [] }, "none")
    await waitForActorState(server, "inferenceRequest", none.body.inference_request.public_id, "failed")
    const refused = (
      await request(server.baseUrl, "GET", `${collection}/${none.body.inference_request.public_id}`, {
        headers: bearer(sibling.token)
      })
    ).body.inference_request
    expect(refused.result.error.code).toBe("model_refused")
  })
})

describe("input_estimate", () => {
  const estimate = (members: Record<string, unknown>) =>
    call("POST", `${requests()}/input_estimate`, { input_estimate: members })

  it("counts what create would send with the model's tokenizer, without the window gate", async () => {
    const hello = await estimate({ workload: "text_generation", model: { model: "local/echo" }, input: "hello" })
    expect(hello.status).toBe(200)
    expect(hello.body.input_estimate).toEqual({
      input_tokens: 6,
      tokenizer_exact: true,
      catalog_input_token_limit: 32768,
      model: { provider_id: "local", model_ref: "local/echo", reasoning_enabled: false, reasoning_effort: "medium" }
    })
    const terse = await estimate({
      workload: "text_generation",
      model: { model: "local/echo" },
      input: [
        { role: "system", content: "You are terse." },
        { role: "user", content: "hello" }
      ]
    })
    expect(terse.body.input_estimate.input_tokens).toBe(14)
    const over = await estimate({
      workload: "text_generation",
      model: { model: "local/tiny" },
      input: "word ".repeat(400)
    })
    expect(over.status).toBe(200)
    expect(over.body.input_estimate.input_tokens).toBeGreaterThan(256)
    const unknown = await estimate({ workload: "text_generation", model: { model: "local/none" }, input: "hi" })
    expect(unknown.body.error.code).toBe("validation_failed")
  })
})

describe("idempotency", () => {
  it("a repeat within 24 h answers 200 with the standing projection; another body is 409", async () => {
    const created = await create(
      { workload: "text_generation", model: { model: "local/echo" }, input: "once" },
      "repeat-key"
    )
    expect(created.status).toBe(202)
    expect(created.headers.get("idempotency-replayed")).toBe("false")
    const id = created.body.inference_request.public_id
    await settled(id, "completed")
    const repeat = await create(
      { workload: "text_generation", model: { model: "local/echo" }, input: "once" },
      "repeat-key"
    )
    expect(repeat.status).toBe(200)
    expect(repeat.headers.get("idempotency-replayed")).toBe("true")
    expect(repeat.body.inference_request).toMatchObject({ public_id: id, status: "completed" })
    expect(repeat.body.inference_request.result.output_text).toBe("echo: once")
    const other = await create(
      { workload: "text_generation", model: { model: "local/echo" }, input: "other" },
      "repeat-key"
    )
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe("idempotency_envelope_mismatch")
  })

  it("a key is reserved per caller within the workspace: the same key elsewhere is a new request", async () => {
    const second = await call(
      "POST",
      "/workspaces",
      { workspace: { name: "second" } },
      { "idempotency-key": "ws-second" }
    )
    const elsewhere = await request(
      server.baseUrl,
      "POST",
      `/agent_api/v1/workspaces/${second.body.workspace.public_id}/inference_requests`,
      {
        headers: { ...bearer(agent.token), "idempotency-key": "repeat-key" },
        body: { inference_request: { workload: "text_generation", model: { model: "local/echo" }, input: "elsewhere" } }
      }
    )
    expect(elsewhere.status).toBe(202)
    expect(elsewhere.headers.get("idempotency-replayed")).toBe("false")
  })
})

describe("uploads as input", () => {
  const upload = async (token: string, data: Uint8Array | string, filename: string) => {
    const form = fileForm(data, filename)
    const answer = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
      headers: { ...bearer(token), "content-type": form.contentType },
      raw: form.body
    })
    expect(answer.status).toBe(201)
    return answer.body.upload.public_id as string
  }

  it("upload parts and upload_public_ids reach the model; the model's media and the caller's own uploads are judged", async () => {
    const image = await upload(agent.token, onePixelPng, "dot.png")
    const answered = await create({
      workload: "text_generation",
      model: { model: "local/echo" },
      input: [
        {
          role: "user",
          content: [
            { type: "text", text: "look" },
            { type: "upload", upload_public_id: image }
          ]
        }
      ],
      upload_public_ids: [image]
    })
    expect(answered.status).toBe(202)
    const done = await settled(answered.body.inference_request.public_id, "completed")
    expect(done.result.output_text).toBe("echo: look [image/png] [image/png]")
    expect(done.result.usage.input_tokens).toBe(1 + 256 * 2 + 4)
    const tiny = await text("local/tiny", "see", { upload_public_ids: [image] })
    expect(tiny.status).toBe(422)
    expect(tiny.body.error.code).toBe("unsupported_input_media")
    const stranger = await text("local/echo", "see", { upload_public_ids: [absentUpload] })
    expect(stranger.body.error.code).toBe("unknown_input_upload")
    const spoken = await create({
      workload: "speech_generation",
      model: { model: "local/speech" },
      input: "say",
      upload_public_ids: [image]
    })
    expect(spoken.body.error.code).toBe("validation_failed")
    const fallback = await text("local/script", JSON.stringify({ refuse: true }), {
      upload_public_ids: [image],
      fallback_models: ["local/tiny", "local/echo"]
    })
    const switched = await settled(fallback.body.inference_request.public_id, "completed")
    expect(switched.result.model_change.to).toBe("local/echo")
    const items = (await events(fallback.body.inference_request.public_id)).events
    const queued = items.find((item: any) => item.payload.model_change)
    expect(queued.payload.model_skips).toEqual([{ model: "local/tiny", reason: "unsupported_input_media" }])
  })

  it("an upload over 8 MiB is 422 input_media_too_large, by upload_public_ids or an upload part; 8 MiB passes", async () => {
    const bound = 8 * 1024 * 1024
    const pdf = (size: number) => `%PDF-1.4\n${"a".repeat(size - 9)}`
    const over = await upload(agent.token, pdf(bound + 1), "over.pdf")
    const at = await upload(agent.token, pdf(bound), "at.pdf")
    const named = await text("local/echo", "read", { upload_public_ids: [over] })
    expect([named.status, named.body.error?.code]).toEqual([422, "input_media_too_large"])
    const part = await text("local/echo", [
      {
        role: "user",
        content: [
          { type: "text", text: "read" },
          { type: "upload", upload_public_id: over }
        ]
      }
    ])
    expect([part.status, part.body.error?.code]).toEqual([422, "input_media_too_large"])
    expect((await text("local/echo", "read", { upload_public_ids: [at] })).body.error?.code).not.toBe(
      "input_media_too_large"
    )
  })

  it("judges the uploads in the supplement's order: the caller's own, then admitted by the model, then within 8 MiB", async () => {
    const bound = 8 * 1024 * 1024
    const overText = await upload(agent.token, "a".repeat(bound + 1), "over.txt")
    const overPdf = await upload(agent.token, `%PDF-1.4\n${"a".repeat(bound)}`, "over.pdf")
    const refusal = async (uploads: ReadonlyArray<string>, model = "local/echo") => {
      const answer = await text(model, "read", { upload_public_ids: uploads })
      return [answer.status, answer.body.error?.code]
    }
    expect(await refusal([overText])).toEqual([422, "unsupported_input_media"])
    expect(await refusal([overPdf], "local/tiny")).toEqual([422, "unsupported_input_media"])
    expect(await refusal([overPdf, overText])).toEqual([422, "unsupported_input_media"])
    expect(await refusal([overPdf, absentUpload])).toEqual([422, "unknown_input_upload"])
    expect(await refusal([overPdf])).toEqual([422, "input_media_too_large"])
  })

  it("whoever can read a request naming an upload may read its bytes; others get 404", async () => {
    const image = await upload(agent.token, onePixelPng, "shared.png")
    const bytesOf = (token: string) =>
      request(server.baseUrl, "GET", `/agent_api/v1/uploads/${image}/bytes`, { headers: bearer(token) })
    expect((await bytesOf(sibling.token)).status).toBe(404)
    const named = await text("local/echo", "keep", { upload_public_ids: [image] })
    await settled(named.body.inference_request.public_id, "completed")
    expect((await bytesOf(sibling.token)).status).toBe(200)
    expect((await bytesOf(outsider.token)).status).toBe(404)
  })
})

describe("output files", () => {
  it("an image request's file streams with Range (206, 416, whole on several ranges)", async () => {
    const created = await create({ workload: "image_generation", model: { model: "local/image" }, input: "a red fox" })
    const id = created.body.inference_request.public_id
    const done = await settled(id, "completed")
    expect(done.result.output_files).toEqual([
      { index: 0, filename: "image-1.png", content_type: "image/png", byte_size: expect.any(Number) }
    ])
    const size = done.result.output_files[0].byte_size
    const whole = await fetch(`${server.baseUrl}/agent_api/v1${requests()}/${id}/files/0`, {
      headers: bearer(agent.token)
    })
    expect(whole.status).toBe(200)
    expect(whole.headers.get("content-length")).toBe(String(size))
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    expect(whole.headers.get("content-disposition")).toContain("image-1.png")
    const bytes = new Uint8Array(await whole.arrayBuffer())
    expect([...bytes.subarray(1, 4)]).toEqual([0x50, 0x4e, 0x47])
    const part = await fetch(`${server.baseUrl}/agent_api/v1${requests()}/${id}/files/0`, {
      headers: { ...bearer(agent.token), range: "bytes=1-3" }
    })
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 1-3/${size}`)
    expect(new TextDecoder().decode(await part.arrayBuffer())).toBe("PNG")
    const past = await fetch(`${server.baseUrl}/agent_api/v1${requests()}/${id}/files/0`, {
      headers: { ...bearer(agent.token), range: `bytes=${size}-` }
    })
    expect(past.status).toBe(416)
    expect(past.headers.get("content-range")).toBe(`bytes */${size}`)
    const several = await fetch(`${server.baseUrl}/agent_api/v1${requests()}/${id}/files/0`, {
      headers: { ...bearer(agent.token), range: "bytes=0-1,3-4" }
    })
    expect(several.status).toBe(200)
    expect((await call("GET", `${requests()}/${id}/files/1`)).status).toBe(404)
    expect((await call("GET", `${requests()}/${id}/files/x`)).status).toBe(404)
  })
})

describe("request budget", () => {
  it("each door allows 6,000 requests a minute per caller; the 6,001st answers 429 with Retry-After", async () => {
    const created = await text("local/echo", "budget")
    const id = created.body.inference_request.public_id
    await startOfWindow(server)
    await spend(server, "inference_requests.show", await callerKey(server, agent.publicId), 5_999)
    expect((await call("GET", `${requests()}/${id}`)).status).toBe(200)
    const refused = await call("GET", `${requests()}/${id}`)
    expect(refused.status).toBe(429)
    expect(refused.body.error.code).toBe("rate_limited")
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
    expect((await call("GET", requests())).status).toBe(200)
    const retryAfter = Number(refused.headers.get("retry-after"))
    server.clock.advance(`${retryAfter} seconds`)
    expect((await call("GET", `${requests()}/${id}`)).status).toBe(200)
  })
})

describe("create body", () => {
  it("refuses what the catalog refuses with 422 validation_failed naming the member", async () => {
    const unknown = await text("local/nothing", "hi")
    expect(unknown.status).toBe(422)
    expect(unknown.body.error.code).toBe("validation_failed")
    expect(unknown.body.error.message).toContain("model")
    const effort = await create({
      workload: "text_generation",
      model: { model: "local/tiny", reasoning_effort: "high" },
      input: "hi"
    })
    expect(effort.status).toBe(422)
    expect(effort.body.error.message).toContain("model.reasoning_effort")
    const over = await text("local/tiny", "word ".repeat(400))
    expect(over.status).toBe(422)
    expect(over.body.error.code).toBe("input_over_model_limit")
    const subject = await text("local/echo", "hi", { billing_subject: "x".repeat(256) })
    expect(subject.body.error.code).toBe("billing_subject_too_long")
  })

  it("counts billing_subject and voice in characters: 255 emoji and 64 are within bounds, one more is not", async () => {
    const subject = (count: number) => text("local/echo", "hi", { billing_subject: "🎉".repeat(count) })
    const accepted = await subject(255)
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(202)
    expect(accepted.body.inference_request.billing_subject).toBe("🎉".repeat(255))
    expect((await subject(256)).body.error?.code).toBe("billing_subject_too_long")
    const voice = (count: number) =>
      create({
        workload: "speech_generation",
        model: { model: "local/speech" },
        input: "hi",
        configuration: { voice: "🎤".repeat(count) }
      })
    expect((await voice(64)).status).toBe(202)
    expect((await voice(65)).body.error?.message).toContain("configuration.voice")
  })

  it("answers 400 parameter_missing for an absent root or input, and requires an Idempotency-Key", async () => {
    const noRoot = await call("POST", requests(), { workload: "text_generation" }, { "idempotency-key": "k-root" })
    expect(noRoot.status).toBe(400)
    expect(noRoot.body.error.code).toBe("parameter_missing")
    const noInput = await create({ workload: "text_generation", model: { model: "local/echo" } })
    expect(noInput.body.error.code).toBe("parameter_missing")
    const noKey = await call("POST", requests(), { inference_request: { workload: "text_generation" } })
    expect(noKey.body.error.code).toBe("idempotency_key_required")
  })
})
