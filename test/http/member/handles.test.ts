// Handle renames (PATCH /agent_api/v1/principals/{public_id}): a human renames itself, a steward
// its agents; the released name is reserved 14 days against everyone but the releaser (only the
// latest released name); each rename narrates handle_changed on the account's stream.
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { accountStream } from "@troupe/domain/accounts/HandleChanges"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import * as Outbox from "@troupe/storage/repositories/Outbox"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import { createHuman, createOwner, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

type User = Awaited<ReturnType<typeof createOwner>>

let server: TestServer
let owner: User
let mo: User
let agent: ConnectedAgent
const moCredentials = { email: "mo@example.com", password: "member password" }

const memberToken = (user: User) =>
  server.run(Effect.flatMap(Credentials, (credentials) => credentials.personalToken(user, "member", "handles")))
const rename = (token: string, publicId: string, body: unknown) =>
  request(server.baseUrl, "PATCH", `/agent_api/v1/principals/${publicId}`, { headers: bearer(token), body })
const handleOf = async (token: string) =>
  (await request(server.baseUrl, "GET", "/agent_api/v1/profile", { headers: bearer(token) })).body.member.handle
const items = () =>
  server.run(
    Effect.gen(function* () {
      const account = (yield* (yield* AccountsRepository).currentAccount)!
      return yield* Outbox.read(accountStream(account.public_id), 0n, 100)
    })
  )

const expectError = (response: { status: number; body: any }, status: number, code: string) =>
  expect({ status: response.status, code: response.body?.error?.code }).toEqual({ status, code })

beforeAll(async () => {
  server = await startTestServer()
  owner = await createOwner(server)
  mo = await createHuman(server, { ...moCredentials, displayName: "Mo", role: "member" })
  agent = await connectAgent(server, await signedIn(server, ownerCredentials), "acme/scout")
})
afterAll(() => server?.close())

describe("who may rename", () => {
  it("a human renames itself and narrates handle_changed on the account stream", async () => {
    const token = await memberToken(owner)
    expect(owner.handle).toBe("olive-owner")
    const renamed = await rename(token, owner.public_id, { principal: { handle: "olive" } })
    expect(renamed.status).toBe(200)
    expect(renamed.body.principal).toEqual({
      public_id: owner.public_id,
      handle: "olive",
      kind: "human",
      display_name: "Olive Owner",
      agent_identifier: null,
      steward_public_id: null
    })
    expect(await handleOf(token)).toBe("olive")
    const narrated = (await items()).at(-1)!
    expect(narrated).toMatchObject({
      type: "handle_changed",
      resource_type: "user",
      resource_public_id: owner.public_id,
      payload: { user_public_id: owner.public_id, old: "olive-owner", new: "olive" }
    })
    // The same handle again changes nothing and narrates nothing.
    const count = (await items()).length
    expect((await rename(token, owner.public_id, { handle: "olive" })).status).toBe(200)
    expect((await items()).length).toBe(count)
  })

  it("the steward renames its agent; another human may not; an agent may not rename at all", async () => {
    const ownerToken = await memberToken(owner)
    const renamed = await rename(ownerToken, agent.publicId, { handle: "pathfinder" })
    expect(renamed.status).toBe(200)
    expect(renamed.body.principal).toMatchObject({
      handle: "pathfinder",
      kind: "agent",
      agent_identifier: "acme/scout",
      steward_public_id: owner.public_id
    })
    expect(await handleOf(agent.token)).toBe("pathfinder")
    expect((await items()).at(-1)!.payload).toEqual({
      user_public_id: agent.publicId,
      old: agent.handle,
      new: "pathfinder"
    })
    expectError(await rename(await memberToken(mo), agent.publicId, { handle: "mine" }), 403, "not_authorized")
    expectError(await rename(await memberToken(mo), owner.public_id, { handle: "mine" }), 403, "not_authorized")
    expectError(await rename(agent.token, agent.publicId, { handle: "self-named" }), 403, "not_authorized")
  })

  it("refuses unknown principals, bad handles and taken handles", async () => {
    const token = await memberToken(owner)
    expectError(await rename(token, "0190a4b2-0000-7000-8000-000000000001", { handle: "ghost" }), 404, "not_found")
    expectError(await rename(token, "not-a-uuid", { handle: "ghost" }), 404, "not_found")
    expectError(await rename(token, owner.public_id, {}), 400, "parameter_missing")
    expectError(await rename(token, owner.public_id, { handle: 7 }), 400, "parameter_invalid")
    for (const handle of ["O", "Olive", "-olive", "o".repeat(33), "ol ive"]) {
      expectError(await rename(token, owner.public_id, { handle }), 422, "validation_failed")
    }
    expectError(await rename(token, owner.public_id, { handle: "mo" }), 409, "name_taken")
    expectError(
      await request(server.baseUrl, "PATCH", `/agent_api/v1/principals/${owner.public_id}`, { body: { handle: "x1" } }),
      401,
      "unauthorized"
    )
  })
})

describe("the 14-day reservation", () => {
  it("reserves the released name against everyone but the releaser, only the latest one, for 14 days", async () => {
    const ownerToken = await memberToken(owner)
    const moToken = await memberToken(mo)
    // "olive-owner" was released by the owner: nobody else may take it, nor may the system assign it.
    expectError(await rename(moToken, mo.public_id, { handle: "olive-owner" }), 409, "name_taken")
    // A released agent handle is skipped by the system's assignment too.
    const named = await request(server.baseUrl, "PUT", `/agent_api/v1/profile/agents/${agent.handle}`, {
      headers: bearer(agent.token),
      body: { scope: "steward", description: "Named after a released handle", configuration: {} }
    })
    expect(named.status).toBe(201)
    expect(named.body.agent.handle).toBe(`${agent.handle}-2`)
    // The releaser may retake its name at once; then the name it just left is the reserved one.
    expect((await rename(ownerToken, owner.public_id, { handle: "olive-owner" })).status).toBe(200)
    expectError(await rename(moToken, mo.public_id, { handle: "olive" }), 409, "name_taken")
    // Only the latest released name is reserved.
    expect((await rename(ownerToken, owner.public_id, { handle: "olive-2" })).status).toBe(200)
    expect((await rename(moToken, mo.public_id, { handle: "olive" })).status).toBe(200)
    expectError(await rename(moToken, mo.public_id, { handle: "olive-owner" }), 409, "name_taken")

    server.clock.advance("13 days")
    expectError(await rename(await memberToken(mo), mo.public_id, { handle: "olive-owner" }), 409, "name_taken")
    server.clock.advance("1 day")
    server.clock.advance("1 minute")
    const later = await rename(await memberToken(mo), mo.public_id, { handle: "olive-owner" })
    expect(later.status).toBe(200)
    expect(later.body.principal.handle).toBe("olive-owner")
    const narrated = (await items()).filter((item) => item.type === "handle_changed")
    expect(narrated.map((item) => (item.payload as { new: string }).new)).toEqual([
      "olive",
      "pathfinder",
      "olive-owner",
      "olive-2",
      "olive",
      "olive-owner"
    ])
    expect(narrated.map((item) => Number(item.sequence))).toEqual([1, 2, 3, 4, 5, 6])
  })
})
