// Platform: operators — a real quarantine (a step that fails three times: the snapshot names a
// machine version this server does not know) and its restart through the admin API. Nothing the
// actor accepted is lost: the told message or due timer it failed on is applied once after the
// restart, and while quarantined its timer is not delivered again.
import { ActorHost } from "@troupe/actors/ActorHost"
import { apiSessionActor } from "@troupe/actors/bindings/apiSession"
import { TimerRunner } from "@troupe/actors/TimerRunner"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { afterMessageOutcome, waitForActorState, waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import { signedIn } from "../../support/members.ts"
import { apiToken, createMember, createOwner, memberCredentials, ownerCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer

beforeAll(async () => {
  server = await startTestServer()
  await createOwner(server)
  await createMember(server)
})
afterAll(() => server?.close())

const get = async (path: string) => request(server.baseUrl, "GET", path, { headers: bearer(await apiToken(server)) })
const post = async (path: string) => request(server.baseUrl, "POST", path, { headers: bearer(await apiToken(server)) })
const sql = <A extends object>(f: (sql: SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  server.run(Effect.flatMap(SqlClient, f))
const sessionOf = async (token: string) =>
  (await request(server.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })).body.session.public_id as string
const runDueTimers = () => server.run(Effect.flatMap(TimerRunner, (runner) => runner.runDue))
const eventTypes = (actor: { journal: Array<{ event: { type: string } }> }) =>
  actor.journal.map((entry) => entry.event.type)

/** Makes the actor's next steps fail for real: its snapshot claims a version no machine knows. */
const breakSnapshot = async (id: string) => {
  await sql((s) => s`UPDATE actor_snapshots SET version = 99 WHERE actor_id = ${id}`)
  await server.run(Effect.flatMap(ActorHost, (host) => host.restartKind("apiSession")))
}
const mendSnapshot = (id: string) => sql((s) => s`UPDATE actor_snapshots SET version = 1 WHERE actor_id = ${id}`)

describe("a quarantined actor restarted by an operator", () => {
  it("applies the told event it failed on once after the restart", async () => {
    const id = await sessionOf(await apiToken(server))
    await breakSnapshot(id)
    await afterMessageOutcome(server, id, "quarantined", () =>
      server.run(Effect.flatMap(ActorHost, (host) => host.ref(apiSessionActor).tell(id, { type: "session.revoke" })))
    )
    const quarantined = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(quarantined).toMatchObject({ state: "active", quarantined_at: expect.any(String) })
    expect(quarantined.dead_letters).toMatchObject([{ event: { type: "session.revoke" }, attempts: 3 }])
    expect(quarantined.pending_messages).toMatchObject([{ event: { type: "session.revoke" } }])
    await mendSnapshot(id)
    expect((await post(`/api/v1/admin/actors/apiSession/${id}/restart`)).status).toBe(200)
    await waitForMessages(server, "apiSession", id)
    const applied = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(applied).toMatchObject({ state: "revoked", seq: 2, quarantined_at: null, pending_messages: [] })
    expect(eventTypes(applied)).toEqual(["xstate.init", "session.revoke"])
  })

  it("holds the due timer it failed on (no redelivery while quarantined), then fires it once after the restart", async () => {
    const id = await sessionOf(await apiToken(server))
    await breakSnapshot(id)
    server.clock.advance("30 days")
    await runDueTimers()
    const quarantined = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(quarantined.quarantined_at).not.toBeNull()
    expect(quarantined.dead_letters).toMatchObject([{ event: { type: "session.expire" }, attempts: 3 }])
    expect(quarantined.timers).toMatchObject([{ id: "expiry" }])
    // Delivered now it could only be refused: the runner leaves it be rather than spin on it.
    expect(await runDueTimers()).toBe(0)
    await mendSnapshot(id)
    expect((await post(`/api/v1/admin/actors/apiSession/${id}/restart`)).status).toBe(200)
    await waitForActorState(server, "apiSession", id, "expired")
    const fired = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(fired).toMatchObject({ state: "expired", seq: 2, quarantined_at: null, timers: [] })
    expect(eventTypes(fired)).toEqual(["xstate.init", "session.expire"])
  })

  it("the inspector's restart: an owner with the page's CSRF token; the told event is applied once", async () => {
    const id = await sessionOf(await apiToken(server))
    await breakSnapshot(id)
    await afterMessageOutcome(server, id, "quarantined", () =>
      server.run(Effect.flatMap(ActorHost, (host) => host.ref(apiSessionActor).tell(id, { type: "session.revoke" })))
    )
    await mendSnapshot(id)
    const path = `/inspector/actors/apiSession/${id}/restart`
    const member = await signedIn(server, memberCredentials)
    const memberPage = await member.get("/inspector")
    expect(memberPage.status).toBe(403)
    const owner = await signedIn(server, ownerCredentials)
    const page = await owner.get("/inspector")
    expect(page.status).toBe(200)
    const csrf = /name="csrf-token" content="([^"]+)"/.exec(page.text)![1]!
    const refusedMember = await member.post(path, {}, { "x-csrf-token": csrf })
    expect([refusedMember.status, JSON.parse(refusedMember.text).error.code]).toEqual([403, "not_authorized"])
    const noToken = await owner.post(path, {})
    expect([noToken.status, JSON.parse(noToken.text).error.code]).toEqual([403, "not_authorized"])
    for (const unknown of ["/inspector/actors/apiSession/not-a-uuid/restart", `/inspector/actors/nope/${id}/restart`]) {
      const refused = await owner.post(unknown, {}, { "x-csrf-token": csrf })
      expect([refused.status, JSON.parse(refused.text).error.code]).toEqual([404, "not_found"])
    }
    expect((await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor.quarantined_at).not.toBeNull()
    const restarted = await owner.post(path, {}, { "x-csrf-token": csrf })
    expect([restarted.status, JSON.parse(restarted.text)]).toEqual([200, { restarted: `apiSession/${id}` }])
    await waitForMessages(server, "apiSession", id)
    const applied = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(applied).toMatchObject({ state: "revoked", quarantined_at: null })
    expect(eventTypes(applied)).toEqual(["xstate.init", "session.revoke"])
  })
})
