// A run's model rounds carry uploads (runs supplement "Model steps": a model step's `attachments`;
// spec "Engine selection": a run-backed reply answers its input; supplement "Local provider
// (testable)": echo appends " [<content_type>]" per upload part of the last user message), through
// the real server on real PostgreSQL: a hosted reply's first round carries its input's attachments,
// a model step's round its own; a text-only model fails that round unsupported_input_media and the
// run holds needs_attention.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { type HostingWorld, hostedInput, hostingWorld } from "../../support/hosted-runs.ts"
import { bearer, request } from "../../support/http.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let world: HostingWorld

/** A PNG the first agent (the inputs' author, the runs' creator) uploads: its public id. */
const upload = async () => {
  const form = fileForm(onePixelPng, "look.png")
  const made = await request(server.baseUrl, "POST", "/agent_api/v1/uploads", {
    headers: { ...bearer(world.agents[0]!.token), "content-type": form.contentType },
    raw: form.body
  })
  expect(made.status).toBe(201)
  return made.body.upload.public_id as string
}

/** A standalone run of one model step on `model` attaching `attachments`, started: its public id. */
const started = async (model: string, attachments: ReadonlyArray<unknown>) => {
  const created = await world.member("POST", "/runs", {
    run: { approval_mode: "bypass", steps: [{ model: { prompt: "look", model: { model }, attachments } }] }
  })
  expect(created.status, JSON.stringify(created.body)).toBe(201)
  const id = created.body.run.public_id as string
  expect((await world.member("POST", `/runs/${id}/start`)).status).toBe(200)
  return id
}
const task = async (runId: string, key: string) => (await world.member("GET", `/runs/${runId}/tasks/${key}`)).body.task

beforeAll(async () => {
  server = await startTestServer()
  world = await hostingWorld(server, {
    agents: ["run-attachments-agent"],
    workspace: "run-attachments",
    answerer: "looker",
    description: "Answers through a run",
    kernelTools: ["svc.conversation.status"]
  })
})
afterAll(() => server?.close())

describe("a run's model rounds carry uploads", () => {
  it("a run-backed reply to an input with a PNG: its first round reads it as an upload part", async () => {
    // The answerer's rounds run on local/script, which answers as echo does for a prompt not a directive.
    const id = await world.createConversation({ title: "hosted look" })
    const { runId, turnId } = await hostedInput(server, world.member, id, {
      kind: "direct_reply",
      text: "look",
      attachments: [await upload()],
      answering_user_public_id: world.answererId
    })
    await waitForConversation(
      server,
      id,
      async () => (await world.turnsOf(id)).find((turn) => turn.public_id === turnId)?.status === "completed"
    )
    const turn = (await world.turnsOf(id)).find((each) => each.public_id === turnId)
    expect(turn.content).toBe("echo: look [image/png]")
    const trace = (await world.member("GET", `/runs/${runId}`)).body.run
    expect(trace.status).toBe("completed")
  })

  it("a run-backed reply on a text-only model: its round fails unsupported_input_media, the run needs attention", async () => {
    // An answerer whose replies are run-backed (it imports a kernel tool) on local/tiny (text only).
    const named = await request(server.baseUrl, "PUT", "/agent_api/v1/profile/agents/tiny-looker", {
      headers: bearer(world.agents[0]!.token),
      body: {
        scope: "instance",
        description: "Answers through a run on a text-only model",
        configuration: {
          approval_mode: "bypass",
          default_model: "local/tiny",
          kernel_tools: ["svc.conversation.status"]
        }
      }
    })
    expect([200, 201]).toContain(named.status)
    const tinyAnswerer = named.body.agent.public_id as string
    const id = await world.createConversation({ title: "hosted tiny" })
    const { runId } = await hostedInput(server, world.member, id, {
      kind: "direct_reply",
      text: "look",
      attachments: [await upload()],
      answering_user_public_id: tinyAnswerer
    })
    await waitForActorState(server, "run", runId, "needs_attention")
    const trace = (await world.member("GET", `/runs/${runId}`)).body.run
    const round = (trace.tasks as Array<any>).find((each) => each.kind === "model_task")
    expect(await task(runId, round.key)).toMatchObject({
      status: "failed",
      error: { key: "unsupported_input_media" }
    })
  })

  it("a standalone run's model step with an attachment: local/echo answers with its part", async () => {
    const id = await started("local/echo", [await upload()])
    await waitForActorState(server, "run", id, "completed")
    expect((await task(id, "s1-model-1")).output).toBe("echo: look [image/png]")
  })

  it("a step attachment named as an object reads the same", async () => {
    const id = await started("local/echo", [{ upload_public_id: await upload() }])
    await waitForActorState(server, "run", id, "completed")
    expect((await task(id, "s1-model-1")).output).toBe("echo: look [image/png]")
  })

  it("a text-only model fails the round unsupported_input_media; the run holds needs_attention", async () => {
    const id = await started("local/tiny", [await upload()])
    await waitForActorState(server, "run", id, "needs_attention")
    expect(await task(id, "s1-model-1")).toMatchObject({
      status: "failed",
      error: { key: "unsupported_input_media" }
    })
    expect((await world.member("GET", `/runs/${id}`)).status).toBe(200)
  })

  it("an upload not the creator's own fails the round unknown_input_upload", async () => {
    const id = await started("local/echo", ["00000000-0000-4000-8000-000000000000"])
    await waitForActorState(server, "run", id, "needs_attention")
    expect(await task(id, "s1-model-1")).toMatchObject({ status: "failed", error: { key: "unknown_input_upload" } })
  })
})
