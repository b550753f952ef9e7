// Platform: deployment administration through the real server: the answers without
// SERVICE_DEPLOYMENT_SOCKET, request validation, the gate and the platform credential rules, and
// the updater protocol against the reference updater (troupe updater --fake) on a temporary
// socket: the whole upgrade, the updater's codes passed through, and updater_unavailable once it
// is gone.
import { randomUUID } from "node:crypto"
import type { UserRow } from "@troupe/storage/repositories/Accounts"
import { uuidv7 } from "uuidv7"
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest"
import { bearer, request } from "../../support/http.ts"
import { signedIn as browserSignedIn, connectAgent } from "../../support/members.ts"
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
import { type ReferenceUpdaterProcess, startReferenceUpdater, walkedPhases } from "../../support/updater.ts"

const base = "/api/v1/admin/deployment"

interface Admin {
  readonly server: TestServer
  readonly owner: string
  readonly ownerRow: UserRow
  readonly ownerPublicId: string
}

const signedIn = async (server: TestServer): Promise<Admin> => {
  const ownerRow = await createOwner(server)
  return { server, owner: await apiToken(server), ownerRow, ownerPublicId: ownerRow.public_id }
}

const uuidV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const call = (
  admin: Admin,
  method: string,
  path: string,
  options: { body?: unknown; key?: string | null; token?: string } = {}
) =>
  request(admin.server.baseUrl, method, path, {
    headers: {
      ...bearer(options.token ?? admin.owner),
      ...(options.key === null || options.key === undefined ? {} : { "idempotency-key": options.key })
    },
    ...(options.body === undefined ? {} : { body: options.body })
  })

const expectRefusal = (response: { status: number; body: any }, status: number, code: string) => {
  expect(response.status, JSON.stringify(response.body)).toBe(status)
  expect(response.body.error.code).toBe(code)
}

const candidate = {
  release: "2601010000",
  images: [{ name: "troupe", reference: "ghcr.io/example/troupe:2601010000" }]
}

describe("without SERVICE_DEPLOYMENT_SOCKET", () => {
  let admin: Admin
  let member: string
  beforeAll(async () => {
    admin = await signedIn(await startTestServer())
    await createMember(admin.server)
    member = await apiToken(admin.server, memberCredentials)
  })
  afterAll(() => admin?.server.close())

  it("GET answers supported false and nothing else, not cacheable", async () => {
    const response = await call(admin, "GET", base)
    expect(response.status).toBe(200)
    expect(response.headers.get("cache-control")).toBe("no-store")
    expect(response.body).toEqual({
      deployment: {
        supported: false,
        sources: [],
        installed: null,
        candidate: null,
        preflight: null,
        active_operation: null,
        last_operation: null
      }
    })
  })

  it("release_check and upgrades are 503 updater_unavailable once the request is valid", async () => {
    for (const body of [undefined, null, {}, { release_check: { tag: "latest", backup: false } }]) {
      const response = await call(admin, "POST", `${base}/release_check`, { body })
      expectRefusal(response, 503, "updater_unavailable")
      expect(response.headers.get("cache-control")).toBe("no-store")
    }
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate } }),
      503,
      "updater_unavailable"
    )
  })

  it("a release tag is latest or ten digits naming a real UTC minute, else 400 invalid_request", async () => {
    for (const tag of [
      "2613010000",
      "2602300000",
      "2601012400",
      "2601010060",
      "260101000",
      "26010100000",
      "newest",
      "",
      2601010000
    ]) {
      const response = await call(admin, "POST", `${base}/release_check`, { body: { release_check: { tag } } })
      expectRefusal(response, 400, "invalid_request")
    }
    expectRefusal(
      await call(admin, "POST", `${base}/release_check`, { body: { release_check: { tag: "2402291159" } } }),
      503,
      "updater_unavailable"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, {
        key: uuidv7(),
        body: { candidate: { ...candidate, release: "latest" } }
      }),
      400,
      "invalid_request"
    )
  })

  it("backup is a boolean, the Idempotency-Key a UUIDv7 and the candidate required", async () => {
    expectRefusal(
      await call(admin, "POST", `${base}/release_check`, { body: { release_check: { backup: "yes" } } }),
      400,
      "parameter_invalid"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { backup: 1, candidate } }),
      400,
      "parameter_invalid"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { body: { candidate } }),
      400,
      "idempotency_key_required"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: " ", body: { candidate } }),
      400,
      "idempotency_key_required"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: randomUUID(), body: { candidate } }),
      400,
      "parameter_invalid"
    )
    expectRefusal(await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: {} }), 400, "parameter_missing")
  })

  it("no upgrade id names anything: the receipt, its log and its stream are 404", async () => {
    for (const path of ["", "/log", "/log?cursor=3", "/stream"]) {
      const response = await call(admin, "GET", `${base}/upgrades/${uuidv7()}${path}`)
      expectRefusal(response, 404, "not_found")
      expect(response.headers.get("cache-control")).toBe("no-store")
    }
  })

  it("a live human owner or admin only: a member is 403 not_authorized, no credential 401", async () => {
    await createHuman(admin.server, {
      email: "ada@example.com",
      password: "admin password",
      displayName: "Ada",
      role: "admin"
    })
    const ada = await apiToken(admin.server, { email: "ada@example.com", password: "admin password" })
    expect((await call(admin, "GET", base, { token: ada })).status).toBe(200)
    for (const [method, path] of [
      ["GET", base],
      ["POST", `${base}/release_check`],
      ["POST", `${base}/upgrades`],
      ["GET", `${base}/upgrades/${uuidv7()}`],
      ["GET", `${base}/upgrades/${uuidv7()}/log`],
      ["GET", `${base}/upgrades/${uuidv7()}/stream`]
    ] as const) {
      expectRefusal(await call(admin, method, path, { token: member }), 403, "not_authorized")
      expectRefusal(await request(admin.server.baseUrl, method, path), 401, "unauthorized")
    }
  })
})

describe('credentials (spec "Platform plane")', () => {
  let admin: Admin
  beforeAll(async () => {
    admin = await signedIn(await startTestServer())
  })
  afterAll(() => admin?.server.close())

  it("agent and member-plane credentials are 401; a platform personal token works", async () => {
    const browser = await browserSignedIn(admin.server, ownerCredentials)
    const agent = await connectAgent(admin.server, browser, "deployment-agent")
    const memberPlane = await personalToken(admin.server, admin.ownerRow, "member")
    const platform = await personalToken(admin.server, admin.ownerRow, "platform")
    for (const path of [base, `${base}/upgrades/${uuidv7()}`, `${base}/upgrades/${uuidv7()}/stream`]) {
      for (const token of [agent.token, memberPlane]) {
        const refused = await call(admin, "GET", path, { token })
        expectRefusal(refused, 401, "unauthorized")
        expect(refused.headers.get("cache-control")).toBe("no-store")
      }
      expect((await call(admin, "GET", path, { token: platform })).status).toBe(path === base ? 200 : 404)
    }
  })

  it("the browser cookie authorizes safe reads only; a present Authorization header is authoritative", async () => {
    const browser = await browserSignedIn(admin.server, ownerCredentials)
    expect((await browser.get(base)).status).toBe(200)
    expect((await browser.get(`${base}/upgrades/${uuidv7()}/stream`)).status).toBe(404)
    const posted = await fetch(`${admin.server.baseUrl}${base}/release_check`, {
      method: "POST",
      headers: { cookie: browser.cookieHeader }
    })
    expect(posted.status).toBe(401)
    expect(posted.headers.get("cache-control")).toBe("no-store")
    for (const path of [base, `${base}/upgrades/${uuidv7()}/stream`]) {
      expect((await browser.get(path, { authorization: "Bearer sk-svc-session-v1-nope.nope" })).status).toBe(401)
    }
  })
})

describe("with the reference updater", () => {
  let updater: ReferenceUpdaterProcess
  let admin: Admin
  beforeAll(async () => {
    updater = await startReferenceUpdater()
    admin = await signedIn(await startTestServer({ deploymentSocket: updater.path }))
  })
  afterAll(async () => {
    await admin?.server.close()
    await updater?.close()
  })

  const settled = async (id: string) => {
    await vi.waitFor(
      async () => expect((await call(admin, "GET", `${base}/upgrades/${id}`)).body.upgrade.status).not.toBe("running"),
      { timeout: 10_000, interval: 100 }
    )
    return (await call(admin, "GET", `${base}/upgrades/${id}`)).body.upgrade
  }

  it("describes the deployment: supported, the installed release, nothing checked yet", async () => {
    const response = await call(admin, "GET", base)
    expect(response.status).toBe(200)
    expect(response.body.deployment).toMatchObject({
      supported: true,
      sources: [{ name: "troupe" }],
      installed: { release: "2512150000" },
      candidate: null,
      preflight: null,
      active_operation: null,
      last_operation: null
    })
  })

  it("Upgrade receipt: accepted --progress--> preparing, draining, stopping, backing_up, migrating, activating, resuming, verifying, completed: status running, then succeeded", async () => {
    const checked = await call(admin, "POST", `${base}/release_check`, {
      body: { release_check: { tag: "latest", backup: true } }
    })
    expect(checked.status).toBe(200)
    const { deployment } = checked.body
    expect(deployment.candidate).toMatchObject(candidate)
    expect(deployment.preflight).toMatchObject({ ready: true, backup: true, checks: [{ status: "passed" }] })
    const key = uuidv7()
    const accepted = await call(admin, "POST", `${base}/upgrades`, {
      key,
      body: { backup: true, candidate: deployment.candidate }
    })
    expect(accepted.status).toBe(202)
    const receipt = accepted.body.upgrade
    expect(receipt).toMatchObject({
      id: expect.stringMatching(uuidV7),
      idempotency_key: key,
      actor_public_id: admin.ownerPublicId,
      accepted_at: expect.any(String),
      updated_at: expect.any(String),
      target: candidate,
      previous: { release: "2512150000" },
      phase: "accepted",
      status: "running",
      backup: true,
      database_backup: null
    })
    expect(accepted.headers.get("location")).toBe(`${base}/upgrades/${receipt.id}`)
    expect(accepted.headers.get("cache-control")).toBe("no-store")
    const done = await settled(receipt.id)
    expect(done).toMatchObject({ phase: "completed", status: "succeeded", database_backup: { available: true } })
    expect(done.completed_at).toEqual(expect.any(String))
    const log = await call(admin, "GET", `${base}/upgrades/${receipt.id}/log`)
    expect(log.body.log.entries.map((entry: { text: string }) => entry.text.split(":")[0])).toEqual(walkedPhases)
    expect(log.body.log.next_cursor).toBe(log.body.log.entries.at(-1).cursor)
    const rest = await call(admin, "GET", `${base}/upgrades/${receipt.id}/log?cursor=${log.body.log.entries[6].cursor}`)
    expect(rest.body.log.entries.map((entry: { text: string }) => entry.text.split(":")[0])).toEqual(
      walkedPhases.slice(7)
    )
    const now = (await call(admin, "GET", base)).body.deployment
    expect(now).toMatchObject({
      installed: candidate,
      active_operation: null,
      last_operation: { id: receipt.id, status: "succeeded" }
    })
    // The key replays the same receipt; with another request it is the updater's idempotency_conflict.
    const replay = await call(admin, "POST", `${base}/upgrades`, {
      key,
      body: { backup: true, candidate: deployment.candidate }
    })
    expect(replay.status).toBe(202)
    expect(replay.body.upgrade.id).toBe(receipt.id)
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key, body: { backup: false, candidate } }),
      409,
      "idempotency_conflict"
    )
  })

  it("passes the updater's refusals through at the spec's statuses", async () => {
    await call(admin, "POST", `${base}/release_check`, { body: { release_check: { backup: false } } })
    expectRefusal(
      await call(admin, "POST", `${base}/release_check`, { body: { release_check: { tag: "2601020000" } } }),
      503,
      "release_unavailable"
    )
    const other = { ...candidate, release: "2601010001" }
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate: other } }),
      409,
      "candidate_changed"
    )
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { backup: true, candidate } }),
      409,
      "preflight_failed"
    )
    const first = await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate } })
    expect(first.status).toBe(202)
    expect(first.body.upgrade.backup).toBe(false)
    expectRefusal(
      await call(admin, "POST", `${base}/upgrades`, { key: uuidv7(), body: { candidate } }),
      409,
      "upgrade_in_progress"
    )
    expectRefusal(await call(admin, "GET", `${base}/upgrades/${uuidv7()}`), 404, "not_found")
    expectRefusal(await call(admin, "GET", `${base}/upgrades/not-an-id/log`), 404, "not_found")
    expectRefusal(
      await call(admin, "GET", `${base}/upgrades/${first.body.upgrade.id}/log?cursor=sideways`),
      400,
      "invalid_request"
    )
    expect(await settled(first.body.upgrade.id)).toMatchObject({ status: "succeeded", database_backup: null })
  })

  it("an updater that does not answer is 503 updater_unavailable", async () => {
    await updater.close()
    expectRefusal(await call(admin, "GET", base), 503, "updater_unavailable")
    expectRefusal(await call(admin, "POST", `${base}/release_check`), 503, "updater_unavailable")
    expectRefusal(await call(admin, "GET", `${base}/upgrades/${uuidv7()}`), 503, "updater_unavailable")
  })
})
