import { contactRefusal } from "@troupe/domain/conversations/Contact"
import { Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { twoStewards } from "../../support/account.ts"
import { callerOf as callersOf } from "../../support/callers.ts"
import { type Browser, bearer, csrfTokenIn, request } from "../../support/http.ts"
import { type ConnectedAgent, signedIn } from "../../support/members.ts"
import { memberCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let agent: ConnectedAgent
let other: ConnectedAgent
let memberAgent: ConnectedAgent
let ownerToken: string
let memberToken: string
let ownerBrowser: Browser
let memberBrowser: Browser
let workspaceId: string

const absentId = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

let keys = 0
const conversation = async (token: string, members: Record<string, unknown> = {}, workspace = workspaceId) => {
  const made = await call(
    "POST",
    `/workspaces/${workspace}/conversations`,
    token,
    { conversation: members },
    { "idempotency-key": `settings-${++keys}` }
  )
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  return made.body.conversation as { public_id: string; lock_version: number; context_revision: number }
}

const at = (id: string, workspace = workspaceId) => `/workspaces/${workspace}/conversations/${id}`
const setRunner = (token: string, id: string, executor: string | null, workspace = workspaceId) =>
  call("PUT", `${at(id, workspace)}/default_runner`, token, { default_runner: { executor_public_id: executor } })
const setMemory = (token: string, id: string, body: unknown) => call("POST", `${at(id)}/memory_context`, token, body)
const feed = async (token: string, id: string) =>
  (await call("GET", `${at(id)}/events`, token)).body.events as Array<{ type: string; payload: any }>

/** A machine connected through the device flow, approved by `browser` with `scope`; its public id. */
const machine = async (
  browser: Browser,
  identifier: string,
  scope: "user_private" | "account_wide",
  extra: Record<string, string> = {}
) => {
  const started = await startDevice(server, machineFields(identifier, extra))
  await decide(browser, started.user_code, "approve", scope)
  const transport = (await poll(server, started.device_code)).body.access_token as string
  return (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(transport) })).body.executor
    .public_id as string
}

const callerOf = (publicId: string) => callersOf(server, publicId)

let ownerRunner: string
let wideRunner: string
let memberRunner: string
let revokedRunner: string
let provider: string

beforeAll(async () => {
  server = await startTestServer()
  const account = await twoStewards(server, {
    owner: ["settings-agent", "settings-other"],
    member: ["settings-member-agent"]
  })
  ;[agent, other] = account.ownerAgents as [ConnectedAgent, ConnectedAgent]
  memberAgent = account.memberAgents[0]!
  ownerToken = account.ownerToken
  memberToken = account.memberToken
  ownerBrowser = account.ownerBrowser
  memberBrowser = await signedIn(server, memberCredentials)
  const made = await call(
    "POST",
    "/workspaces",
    ownerToken,
    { workspace: { name: "Settings room", access_mode: "account_wide" } },
    { "idempotency-key": "settings-room" }
  )
  workspaceId = made.body.workspace.public_id
  ownerRunner = await machine(ownerBrowser, "settings-owner-runner", "user_private")
  wideRunner = await machine(ownerBrowser, "settings-wide-runner", "account_wide")
  memberRunner = await machine(memberBrowser, "settings-member-runner", "user_private")
  revokedRunner = await machine(ownerBrowser, "settings-revoked-runner", "user_private")
  provider = await machine(ownerBrowser, "settings-provider", "account_wide", { executor_kind: "tool_provider" })
  const page = await ownerBrowser.get("/runners")
  const revoked = await ownerBrowser.post(`/runners/${revokedRunner}/revoke`, { csrf_token: csrfTokenIn(page.text) })
  expect(revoked.status).toBe(303)
})
afterAll(() => server?.close())

describe("default runner", () => {
  it("sets a runner the answerer may use: the block, lock_version +1, context_revision kept, narrated", async () => {
    const made = await conversation(agent.token)
    const set = await setRunner(agent.token, made.public_id, ownerRunner)
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    expect(set.body.conversation).toMatchObject({
      default_runner: {
        executor_public_id: ownerRunner,
        display_name: "Runner settings-owner-runner",
        presence: "not_yet_seen",
        last_seen_at: null
      },
      lock_version: made.lock_version + 1,
      context_revision: made.context_revision
    })
    const shown = await call("GET", at(made.public_id), agent.token)
    expect(shown.body.conversation.default_runner.executor_public_id).toBe(ownerRunner)
    const items = await feed(agent.token, made.public_id)
    expect(items.map((item) => item.type)).toEqual(["default_runner_changed"])
    expect(items[0]!.payload).toMatchObject({
      executor_public_id: ownerRunner,
      previous_executor_public_id: null,
      by: agent.publicId
    })
  })

  it("the same runner again changes nothing; another names the previous; null clears", async () => {
    const made = await conversation(agent.token)
    await setRunner(agent.token, made.public_id, ownerRunner)
    const again = await setRunner(agent.token, made.public_id, ownerRunner.toUpperCase())
    expect(again.status).toBe(200)
    expect(again.body.conversation.lock_version).toBe(made.lock_version + 1)
    const moved = await setRunner(agent.token, made.public_id, wideRunner)
    expect(moved.body.conversation.default_runner.executor_public_id).toBe(wideRunner)
    const cleared = await call("PUT", `${at(made.public_id)}/default_runner`, agent.token, {
      executor_public_id: null
    })
    expect(cleared.status).toBe(200)
    expect(cleared.body.conversation).toMatchObject({ default_runner: null, lock_version: made.lock_version + 3 })
    const cleanAgain = await setRunner(agent.token, made.public_id, null)
    expect(cleanAgain.body.conversation.lock_version).toBe(made.lock_version + 3)
    const payloads = (await feed(agent.token, made.public_id)).map((item) => [item.type, item.payload])
    expect(payloads).toEqual([
      [
        "default_runner_changed",
        expect.objectContaining({ executor_public_id: ownerRunner, previous_executor_public_id: null })
      ],
      [
        "default_runner_changed",
        expect.objectContaining({ executor_public_id: wideRunner, previous_executor_public_id: ownerRunner })
      ],
      [
        "default_runner_changed",
        expect.objectContaining({ executor_public_id: null, previous_executor_public_id: wideRunner })
      ]
    ])
  })

  it("unknown or not a runner 404 runner_not_found; revoked or another human's 409 runner_not_eligible", async () => {
    const made = await conversation(agent.token)
    expectError(await setRunner(agent.token, made.public_id, absentId), 404, "runner_not_found")
    expectError(await setRunner(agent.token, made.public_id, provider), 404, "runner_not_found")
    expectError(await setRunner(agent.token, made.public_id, agent.publicId), 404, "runner_not_found")
    expectError(await setRunner(agent.token, made.public_id, revokedRunner), 409, "runner_not_eligible")
    expectError(await setRunner(agent.token, made.public_id, memberRunner), 409, "runner_not_eligible")
    expectError(await setRunner(agent.token, made.public_id, "not-a-uuid"), 400, "parameter_invalid")
    expectError(await call("PUT", `${at(made.public_id)}/default_runner`, agent.token, {}), 400, "parameter_missing")
    expect((await feed(agent.token, made.public_id)).length).toBe(0)
  })

  it("eligibility is the answerer's: the member's runner serves a conversation its agent answers", async () => {
    const made = await conversation(memberToken)
    expectError(await setRunner(memberToken, made.public_id, ownerRunner), 409, "runner_not_eligible")
    expect((await setRunner(memberToken, made.public_id, memberRunner)).status).toBe(200)
    const answered = await conversation(memberAgent.token)
    expect((await setRunner(memberAgent.token, answered.public_id, memberRunner)).status).toBe(200)
    expectError(await setRunner(memberAgent.token, answered.public_id, ownerRunner), 409, "runner_not_eligible")
  })

  it("standing: unseen 404, read level 403, archived 409 conversation_archived", async () => {
    const made = await conversation(agent.token, { access: { default: "read" } })
    expectError(await setRunner(agent.token, absentId, ownerRunner), 404, "not_found")
    expectError(await setRunner(memberToken, made.public_id, ownerRunner), 403, "not_authorized")
    const hidden = await conversation(agent.token, { access: { default: "none" } })
    expectError(await setRunner(memberToken, hidden.public_id, ownerRunner), 404, "not_found")
    expect((await call("POST", `${at(made.public_id)}/archive`, agent.token)).status).toBe(200)
    expectError(await setRunner(agent.token, made.public_id, ownerRunner), 409, "conversation_archived")
    expectError(await setRunner(agent.token, made.public_id, absentId), 409, "conversation_archived")
  })
})

describe("memory_context", () => {
  const root = { name: "conversation", scope: "conversation", access: "read_write" }

  it("sets bindings: lock_version and context_revision +1, effective context follows; null restores", async () => {
    const made = await conversation(agent.token)
    const bindings = [root, { name: "workspace", scope: "workspace", access: "read" }]
    const set = await setMemory(agent.token, made.public_id, { memory_context: { bindings } })
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    expect(set.body.conversation).toMatchObject({
      memory_context: { bindings },
      lock_version: made.lock_version + 1,
      context_revision: made.context_revision + 1
    })
    expect(set.body.conversation.effective_memory_context.bindings.map((b: any) => b.name)).toEqual([
      "conversation",
      "workspace"
    ])
    const same = await setMemory(agent.token, made.public_id, { memory_context: { bindings } })
    expect(same.body.conversation.lock_version).toBe(made.lock_version + 1)
    const restored = await setMemory(agent.token, made.public_id, { memory_context: null })
    expect(restored.body.conversation).toMatchObject({ memory_context: null, context_revision: 2 })
    expect(restored.body.conversation.effective_memory_context.bindings.map((b: any) => b.name)).toEqual([
      "conversation",
      "workspace",
      "user"
    ])
    const off = await setMemory(agent.token, made.public_id, { memory_context: { bindings: [] } })
    expect(off.body.conversation.memory_context).toEqual({ bindings: [] })
    expect(off.body.conversation.effective_memory_context).toEqual({ bindings: [] })
    expect((await feed(agent.token, made.public_id)).length).toBe(0)
  })

  it("16 bindings is the most a set holds: 16 are kept, 17 are 422 validation_failed", async () => {
    const made = await conversation(agent.token)
    const bindings = (count: number) =>
      Array.from({ length: count }, (_, index) =>
        index === 0 ? root : { name: `notes_${index}`, scope: "workspace", access: "read" }
      )
    const sixteen = await setMemory(agent.token, made.public_id, { memory_context: { bindings: bindings(16) } })
    expect(sixteen.status, JSON.stringify(sixteen.body)).toBe(200)
    expect(sixteen.body.conversation.memory_context.bindings).toHaveLength(16)
    expectError(
      await setMemory(agent.token, made.public_id, { memory_context: { bindings: bindings(17) } }),
      422,
      "validation_failed"
    )
  })

  it("absent 400; over 16, a repeated name, no conversation root 422 validation_failed; nothing changes", async () => {
    const made = await conversation(agent.token)
    expectError(await setMemory(agent.token, made.public_id, {}), 400, "parameter_missing")
    const many = Array.from({ length: 17 }, (_, index) => ({
      name: index === 0 ? "conversation" : `notes_${index}`,
      scope: index === 0 ? "conversation" : "workspace",
      access: "read"
    }))
    expectError(
      await setMemory(agent.token, made.public_id, { memory_context: { bindings: many } }),
      422,
      "validation_failed"
    )
    expectError(
      await setMemory(agent.token, made.public_id, { memory_context: { bindings: [root, root] } }),
      422,
      "validation_failed"
    )
    expectError(
      await setMemory(agent.token, made.public_id, {
        memory_context: { bindings: [{ name: "workspace", scope: "workspace", access: "read" }] }
      }),
      422,
      "validation_failed"
    )
    expectError(
      await setMemory(agent.token, made.public_id, {
        memory_context: { bindings: [{ ...root, access: "write" }] }
      }),
      422,
      "validation_failed"
    )
    const shown = (await call("GET", at(made.public_id), agent.token)).body.conversation
    expect(shown).toMatchObject({ memory_context: null, lock_version: made.lock_version })
  })

  it("a speaker or conversation the bindings name must exist (422 validation_failed)", async () => {
    const made = await conversation(agent.token)
    const speaker = (id: string) => ({
      memory_context: { bindings: [root, { name: "speaker", scope: "speaker", access: "read", speaker_public_id: id }] }
    })
    expectError(await setMemory(agent.token, made.public_id, speaker(absentId)), 422, "validation_failed")
    expect((await setMemory(agent.token, made.public_id, speaker(other.publicId))).status).toBe(200)
    const elsewhere = (id: string) => ({
      memory_context: {
        bindings: [root, { name: "earlier", scope: "conversation", access: "read", conversation_public_id: id }]
      }
    })
    expectError(await setMemory(agent.token, made.public_id, elsewhere(absentId)), 422, "validation_failed")
    const earlier = await conversation(agent.token)
    expect((await setMemory(agent.token, made.public_id, elsewhere(earlier.public_id))).status).toBe(200)
  })

  it("needs full level and a conversation not archived", async () => {
    const made = await conversation(agent.token, { access: { default: "read" } })
    const body = { memory_context: null }
    expectError(await setMemory(memberToken, made.public_id, body), 403, "not_authorized")
    await call("POST", `${at(made.public_id)}/archive`, agent.token)
    expectError(await setMemory(agent.token, made.public_id, body), 409, "conversation_archived")
  })
})

describe("the contact rule", () => {
  const refusal = async (authorPublicId: string, targetPublicId: string, workspace: string) => {
    const caller = await callerOf(authorPublicId)
    const target = await callerOf(targetPublicId)
    return server.run(
      Effect.gen(function* () {
        const room = yield* (yield* Workspaces).read(caller, workspace)
        return yield* contactRefusal(caller, room, target.user.id).pipe(
          Effect.match({
            onFailure: (refused) => ("code" in refused ? refused.code : refused._tag),
            onSuccess: () => "passes"
          })
        )
      })
    )
  }

  it("a private entry refuses agents it does not list; self-contact and humans pass; public ignores its list", async () => {
    const room = await call(
      "POST",
      "/workspaces",
      ownerToken,
      { workspace: { name: "Messaging room", access_mode: "account_wide" } },
      { "idempotency-key": "messaging-room" }
    )
    const id = room.body.workspace.public_id
    const policy = (agents: unknown, lockVersion: number) =>
      call("PUT", `/workspaces/${id}/messaging`, ownerToken, { messaging: { agents, lock_version: lockVersion } })
    expect(await refusal(agent.publicId, other.publicId, id)).toBe("passes")
    expect((await policy([{ agent_public_id: other.publicId, mode: "private" }], 0)).status).toBe(200)
    expect(await refusal(agent.publicId, other.publicId, id)).toBe("answerer_not_eligible")
    expect(await refusal(other.publicId, other.publicId, id)).toBe("passes")
    const owner = (await call("GET", "/profile", ownerToken)).body.member.public_id
    expect(await refusal(owner, other.publicId, id)).toBe("passes")
    expect(await refusal(other.publicId, agent.publicId, id)).toBe("passes")
    const listed = [{ agent_public_id: other.publicId, mode: "private", allowed_sender_public_ids: [agent.publicId] }]
    expect((await policy(listed, 1)).status).toBe(200)
    expect(await refusal(agent.publicId, other.publicId, id)).toBe("passes")
    expect(await refusal(memberAgent.publicId, other.publicId, id)).toBe("answerer_not_eligible")
    const open = [{ agent_public_id: other.publicId, mode: "public", allowed_sender_public_ids: [agent.publicId] }]
    expect((await policy(open, 2)).status).toBe(200)
    expect(await refusal(memberAgent.publicId, other.publicId, id)).toBe("passes")
  })
})
