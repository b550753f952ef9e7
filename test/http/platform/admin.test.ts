// Platform: operators — supervisors, actors and machines of the runtime, through the real server,
// and the API session rows observed on their actors.
import { ActorHost } from "@troupe/actors/ActorHost"
import { apiSessionActor } from "@troupe/actors/bindings/apiSession"
import { TimerRunner } from "@troupe/actors/TimerRunner"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { afterMessageOutcome, waitForMessages } from "../../support/actors.ts"
import { bearer, request } from "../../support/http.ts"
import {
  apiToken,
  createHuman,
  createMember,
  createOwner,
  memberCredentials,
  ownerCredentials,
  personalToken
} from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let owner: string
let admin: string
let member: string
let ownerRow: UserRow

beforeAll(async () => {
  server = await startTestServer()
  ownerRow = await createOwner(server)
  await createHuman(server, {
    email: "admin@example.com",
    password: "admin password",
    displayName: "Ada Admin",
    role: "admin"
  })
  await createMember(server)
  owner = await apiToken(server, ownerCredentials)
  admin = await apiToken(server, { email: "admin@example.com", password: "admin password" })
  member = await apiToken(server, memberCredentials)
})
afterAll(() => server?.close())

const get = (path: string, token = owner) => request(server.baseUrl, "GET", path, { headers: bearer(token) })
const post = (path: string, token = owner) => request(server.baseUrl, "POST", path, { headers: bearer(token) })
const sessionOf = async (token: string) => (await get("/api/v1/session", token)).body.session.public_id as string
const sql = <A extends object>(f: (sql: SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  server.run(Effect.flatMap(SqlClient, f))

describe("who may operate", () => {
  it("owner and admin only: a member is 403 not_authorized, no credential 401", async () => {
    for (const path of ["/api/v1/admin/supervisors", "/api/v1/admin/actors", "/api/v1/admin/machines"]) {
      expect((await get(path, owner)).status).toBe(200)
      expect((await get(path, admin)).status).toBe(200)
      const refused = await get(path, member)
      expect(refused.status).toBe(403)
      expect(refused.body.error.code).toBe("not_authorized")
      expect((await request(server.baseUrl, "GET", path)).status).toBe(401)
    }
    expect((await post("/api/v1/admin/supervisors/apiSession/restart", member)).status).toBe(403)
  })
})

describe("supervisors", () => {
  it("lists one supervisor per kind with its counters and actor counts", async () => {
    const response = await get("/api/v1/admin/supervisors")
    const supervisor = response.body.supervisors.find((s: { kind: string }) => s.kind === "apiSession")
    expect(supervisor).toMatchObject({ kind: "apiSession", machine: "apiSession", version: 1, status: "running" })
    expect(supervisor.actors).toBeGreaterThanOrEqual(3)
    expect(supervisor.active_actors).toBeGreaterThanOrEqual(3)
  })

  it("restart drops live actors, counts the restart and is audited", async () => {
    const before = (await get("/api/v1/admin/supervisors")).body.supervisors[0]
    const restarted = await post("/api/v1/admin/supervisors/apiSession/restart")
    expect(restarted.status).toBe(200)
    expect(restarted.body.supervisor.restarts).toBe(before.restarts + 1)
    expect(restarted.body.supervisor.live_actors).toBe(0)
    const again = await post("/api/v1/admin/supervisors/apiSession/restart")
    expect(again.body.supervisor.restarts).toBe(before.restarts + 2)
    const audits = await sql((s) => s`SELECT action, target FROM audit_events WHERE action = 'supervisor.restart'`)
    expect(audits.length).toBeGreaterThanOrEqual(2)
    expect((await post("/api/v1/admin/supervisors/nope/restart")).status).toBe(404)
    expect((await get("/api/v1/session")).status).toBe(200)
  })
})

describe("actors", () => {
  it("shows an API session's actor: state, context, its expiry timer and journal", async () => {
    const id = await sessionOf(owner)
    const response = await get(`/api/v1/admin/actors/apiSession/${id}`)
    expect(response.status).toBe(200)
    const actor = response.body.actor
    expect(actor).toMatchObject({ kind: "apiSession", id, state: "active", status: "active", seq: 1, stuck: false })
    expect(actor.context).toEqual({ kind: "api" })
    expect(actor.timers).toHaveLength(1)
    expect(actor.timers[0].id).toBe("expiry")
    expect(Date.parse(actor.timers[0].due_at) - Date.parse(actor.created_at)).toBe(30 * 24 * 3600 * 1000)
    expect(actor.journal.map((entry: { event: { type: string } }) => entry.event.type)).toEqual(["xstate.init"])
  })

  it("API session: active --DELETE /api/v1/session--> revoked: a step of the session's actor", async () => {
    const token = await apiToken(server)
    const id = await sessionOf(token)
    await request(server.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(token) })
    const actor = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(actor).toMatchObject({ state: "revoked", status: "done", seq: 2 })
    expect(actor.timers).toEqual([])
    expect(actor.journal.at(-1)).toMatchObject({ from: "active", to: "revoked", event: { type: "session.revoke" } })
    const [row] = await sql<{ state: string }>((s) => s`SELECT state FROM sessions WHERE public_id = ${id}`)
    expect(row?.state).toBe("revoked")
  })

  it("API session: active --time, 30 days from issuance--> expired: fired by the durable timer; no longer authenticates", async () => {
    const token = await apiToken(server)
    const id = await sessionOf(token)
    server.clock.advance("30 days")
    await server.run(Effect.flatMap(TimerRunner, (runner) => runner.runDue))
    owner = await apiToken(server)
    const actor = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(actor).toMatchObject({ state: "expired", status: "done" })
    expect(actor.journal.at(-1)).toMatchObject({ from: "active", to: "expired", event: { type: "session.expire" } })
    const [row] = await sql<{ state: string }>((s) => s`SELECT state FROM sessions WHERE public_id = ${id}`)
    expect(row?.state).toBe("expired")
    expect((await get("/api/v1/session", token)).status).toBe(401)
  })

  it("lists by kind and state with keyset pagination; unknown kinds, states and flags are 400", async () => {
    const fresh = await apiToken(server)
    const all = await get("/api/v1/admin/actors?kind=apiSession&state=active&limit=1")
    expect(all.status).toBe(200)
    expect(all.body.actors).toHaveLength(1)
    expect(all.body.actors[0]).toMatchObject({ kind: "apiSession", state: "active" })
    const seen = new Set<string>()
    let after: string | null = null
    do {
      const page: { body: { actors: Array<{ id: string }>; pagination: { next_after: string | null } } } = await get(
        `/api/v1/admin/actors?kind=apiSession&limit=2${after ? `&after=${after}` : ""}`,
        fresh
      )
      for (const actor of page.body.actors) {
        expect(seen.has(actor.id)).toBe(false)
        seen.add(actor.id)
      }
      after = page.body.pagination.next_after
    } while (after)
    expect(seen.has(await sessionOf(fresh))).toBe(true)
    for (const query of ["kind=nope", "state=nowhere", "kind=apiSession&state=nowhere", "stuck=maybe", "limit=0"]) {
      const response = await get(`/api/v1/admin/actors?${query}`, fresh)
      expect(response.status).toBe(400)
      expect(response.body.error.code).toBe("parameter_invalid")
    }
  })

  it("finds stuck actors: non-terminal with no timer, job or waiting party", async () => {
    const token = await apiToken(server)
    const id = await sessionOf(token)
    await sql((s) => s`DELETE FROM actor_timers WHERE actor_id = ${id}`)
    const stuck = await get("/api/v1/admin/actors?stuck=true", token)
    expect(stuck.body.actors.map((actor: { id: string }) => actor.id)).toContain(id)
    expect((await get(`/api/v1/admin/actors/apiSession/${id}`, token)).body.actor.stuck).toBe(true)
    const notStuck = await get("/api/v1/admin/actors?stuck=false&kind=apiSession&limit=100", token)
    expect(notStuck.body.actors.map((actor: { id: string }) => actor.id)).not.toContain(id)
  })

  it("pages through actors that are not stuck without ending early where stuck ones were left out", async () => {
    const token = await apiToken(server)
    const ids: Array<string> = []
    for (let i = 0; i < 4; i++) ids.push(await sessionOf(await apiToken(server)))
    const [first, second, third, fourth] = ids as [string, string, string, string]
    await sql((s) => s`DELETE FROM actor_timers WHERE actor_id IN (${second}, ${fourth})`)
    const seen: Array<string> = []
    let after: string | null = null
    do {
      const page: {
        body: { actors: Array<{ id: string; stuck: boolean }>; pagination: { next_after: string | null } }
      } = await get(`/api/v1/admin/actors?kind=apiSession&stuck=false&limit=1${after ? `&after=${after}` : ""}`, token)
      expect(page.body.actors.every((actor) => !actor.stuck)).toBe(true)
      seen.push(...page.body.actors.map((actor) => actor.id))
      after = page.body.pagination.next_after
    } while (after)
    expect(seen).toEqual(expect.arrayContaining([first, third]))
    expect(seen).not.toContain(second)
    expect(seen).not.toContain(fourth)
    const stuckAndQuarantined = await get("/api/v1/admin/actors?stuck=true&quarantined=true", token)
    expect(stuckAndQuarantined.body.actors).toEqual([])
  })

  it("an actor's detail shows its latest journal entries", async () => {
    const memberPlane = await personalToken(server, ownerRow)
    const agentApi = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
      request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(memberPlane), ...headers }, body })
    const created = await agentApi("POST", "/workspaces", { workspace: { name: "Edit 0" } }, { "idempotency-key": "j" })
    const id = created.body.workspace.public_id as string
    for (let edit = 1; edit <= 205; edit++) {
      const patched = await agentApi("PATCH", `/workspaces/${id}`, {
        workspace: { name: `Edit ${edit}`, lock_version: edit - 1 }
      })
      expect(patched.status).toBe(200)
    }
    const actor = (await get(`/api/v1/admin/actors/workspace/${id}`)).body.actor
    expect(actor.seq).toBe(206)
    expect(actor.journal).toHaveLength(200)
    expect(actor.journal.map((entry: { seq: number }) => entry.seq)).toEqual(
      Array.from({ length: 200 }, (_, index) => index + 7)
    )
  })

  it("a message told to a quarantined actor is pending in its detail until a restart applies it", async () => {
    const token = await apiToken(server)
    const id = await sessionOf(token)
    await sql((s) => s`UPDATE actor_snapshots SET quarantined_at = now() WHERE actor_id = ${id}`)
    // As a quarantine by the host would, the live copy goes: the actor reloads quarantined.
    await server.run(Effect.flatMap(ActorHost, (host) => host.restartKind("apiSession")))
    await afterMessageOutcome(server, id, "quarantined", () =>
      server.run(Effect.flatMap(ActorHost, (host) => host.ref(apiSessionActor).tell(id, { type: "session.revoke" })))
    )
    const waiting = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(waiting).toMatchObject({ state: "active", stuck: false })
    expect(waiting.pending_messages).toEqual([
      {
        from: null,
        event: { type: "session.revoke" },
        attempts: 1,
        next_attempt_at: expect.any(String),
        waiting: "waiting: the receiver is quarantined",
        created_at: expect.any(String)
      }
    ])
    expect((await post(`/api/v1/admin/actors/apiSession/${id}/restart`)).status).toBe(200)
    await waitForMessages(server, "apiSession", id)
    const applied = (await get(`/api/v1/admin/actors/apiSession/${id}`)).body.actor
    expect(applied).toMatchObject({ state: "revoked", pending_messages: [] })
    expect((await get("/api/v1/session", token)).status).toBe(401)
  })

  it("restarts one actor: lifts its quarantine, audited; unknown actors are 404", async () => {
    const token = await apiToken(server)
    const id = await sessionOf(token)
    await sql((s) => s`UPDATE actor_snapshots SET quarantined_at = now() WHERE actor_id = ${id}`)
    const quarantined = await get("/api/v1/admin/actors?quarantined=true", token)
    expect(quarantined.body.actors.map((actor: { id: string }) => actor.id)).toContain(id)
    const restarted = await post(`/api/v1/admin/actors/apiSession/${id}/restart`, token)
    expect(restarted.status).toBe(200)
    expect(restarted.body.actor.quarantined_at).toBeNull()
    const audits = await sql(
      (s) => s`SELECT 1 FROM audit_events WHERE action = 'actor.restart' AND target = ${`apiSession/${id}`}`
    )
    expect(audits).toHaveLength(1)
    for (const path of [
      "/api/v1/admin/actors/apiSession/01900000-0000-7000-8000-000000000000",
      "/api/v1/admin/actors/apiSession/not-a-uuid",
      `/api/v1/admin/actors/nope/${id}`
    ]) {
      expect((await get(path, token)).status).toBe(404)
      expect((await post(`${path}/restart`, token)).status).toBe(404)
    }
  })
})

describe("machines", () => {
  it("describes every machine with its version, states and a Mermaid stateDiagram", async () => {
    const response = await get("/api/v1/admin/machines")
    const apiSession = response.body.machines.find((machine: { kind: string }) => machine.kind === "apiSession")
    expect(apiSession).toMatchObject({ machine: "apiSession", version: 1, states: ["active", "revoked", "expired"] })
    expect(apiSession.mermaid).toContain("stateDiagram-v2")
    expect(apiSession.mermaid).toContain("active --> revoked: session.revoke")
    expect(apiSession.mermaid).toContain("active --> expired: session.expire")
    expect(apiSession.definition.states.active.on["session.revoke"]).toBeDefined()
  })
})
