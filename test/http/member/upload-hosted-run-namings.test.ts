// A conversation-hosted run names the uploads its committed results link (spec "Member: uploads";
// supplement "Uploads": a named one lives while a naming row does): whoever reads the conversation
// reads the bytes, and the namings go with the run when its conversation is reclaimed (the run
// goes with it). Its own server: the clock moves a month.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import {
  inboxCalls,
  type RunWorld,
  readOnlyTool,
  runnerToolConfiguration,
  runWorld,
  waitForRun
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { fileForm, onePixelPng } from "../../support/uploads.ts"

let server: TestServer
let world: RunWorld & { readonly ownerToken: string }
let runner: { token: string; publicId: string }
let answerer: string
let keys = 0

const member = (method: string, path: string, body?: unknown) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(world.agent.token), "idempotency-key": `hosted-namings-${++keys}` },
    ...(body === undefined ? {} : { body })
  })

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("hosted-namings-runner", [readOnlyTool("grep")])
  const named = await member("PUT", "/profile/agents/finder", {
    scope: "instance",
    description: "Answers with a runner's grep",
    configuration: runnerToolConfiguration(runner.publicId, { name: "grep", description: "Search files" })
  })
  expect([201, 200]).toContain(named.status)
  answerer = named.body.agent.public_id
})
afterAll(() => server?.close())

describe("a hosted run's namings", () => {
  it("open the linked upload to the conversation's readers, and go with the run when the conversation is reclaimed", async () => {
    const conversations = `/workspaces/${world.workspaceId}/conversations`
    const conversation = (await member("POST", conversations, { conversation: { title: "found" } })).body.conversation
      .public_id as string
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "z" } }] })
    const input = await member("POST", `${conversations}/${conversation}/inputs`, {
      input: { kind: "direct_reply", text: directive, answering_user_public_id: answerer }
    })
    expect(input.status, JSON.stringify(input.body)).toBe(202)
    const inputId = input.body.input.public_id as string
    let runId = ""
    await waitForConversation(server, conversation, async () => {
      runId =
        (await member("GET", `${conversations}/${conversation}/inputs/${inputId}/materialization`)).body.materialization
          ?.run_public_id ?? ""
      return runId !== ""
    })
    const inbox = inboxCalls(server, runner.token)
    let key = ""
    await waitForRun(server, runId, async () => {
      key = (await inbox.list()).body.tasks.find((each: any) => each.run_public_id === runId)?.task_key ?? ""
      return key !== ""
    })
    const form = fileForm(onePixelPng, "found.png")
    const made = await request(server.baseUrl, "POST", "/agent_api/v1/executor/uploads", {
      headers: { ...bearer(runner.token), "content-type": form.contentType },
      raw: form.body
    })
    expect(made.status).toBe(201)
    const found = made.body.upload.public_id as string
    const claimed = await inbox.claim(runId, key)
    const committed = await inbox.commit(runId, key, {
      claim_token: claimed.body.claim.claim_token,
      content: [{ type: "resource_link", uri: `svc://uploads/${found}`, name: "found.png" }]
    })
    expect(committed.status, JSON.stringify(committed.body)).toBe(200)
    await waitForActorState(server, "run", runId, "completed")
    expect((await member("GET", `/uploads/${found}/bytes`)).status).toBe(200)
    await waitForConversation(
      server,
      conversation,
      async () =>
        (await member("GET", `${conversations}/${conversation}/turns`)).body.turns?.at(-1)?.status === "completed"
    )
    const namings = () =>
      server.run(
        Effect.flatMap(
          SqlClient,
          (sql) => sql`SELECT n.holder_kind FROM upload_namings n JOIN uploads u ON u.id = n.upload_id
                       WHERE u.public_id = ${found}`
        )
      )
    expect(await namings()).toEqual([{ holder_kind: "run" }])
    expect((await member("DELETE", `${conversations}/${conversation}`)).status).toBe(204)
    server.clock.advance("30 days")
    server.clock.advance("1 second")
    await waitForActorState(server, "conversation", conversation, "reaped")
    expect(await namings()).toEqual([])
  })
})
