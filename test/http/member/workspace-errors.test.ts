// The refusals of Member: workspaces (spec "Member: workspaces", "Errors", "Limits";
// SUPPLEMENT "Workspace ownership and access"): every fault answers its status and code, and
// what the caller cannot see answers exactly like absence.
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState } from "../../support/actors.ts"
import { bearer, type JsonResponse, request } from "../../support/http.ts"
import { type ConnectedAgent, connectAgent, signedIn } from "../../support/members.ts"
import {
  createHuman,
  createMember,
  createOwner,
  memberCredentials,
  ownerCredentials,
  personalToken
} from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { decide, machineFields, poll, startDevice } from "../oauth/support-device.ts"

let server: TestServer
let ownerAgent: ConnectedAgent
let otherAgent: ConnectedAgent
let memberAgent: ConnectedAgent
let ownerToken: string
let memberToken: string
let memberPublicId: string
let inactivePublicId: string
let systemPublicId: string
let ownerBrowser: Awaited<ReturnType<typeof signedIn>>

const absentId = "01900000-0000-7000-8000-000000000000"

const call = (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, { headers: { ...bearer(token), ...headers }, body })

let keys = 0
const create = (token: string, workspace: Record<string, unknown>, key = `errors-key-${keys++}`) =>
  call("POST", "/workspaces", token, { workspace }, { "idempotency-key": key })

interface WorkspaceJson {
  readonly public_id: string
  readonly lock_version: number
  readonly state: string
}

const newWorkspace = async (token: string, workspace: Record<string, unknown>): Promise<WorkspaceJson> => {
  const created = await create(token, workspace)
  expect(created.status).toBe(201)
  return created.body.workspace
}

const read = async (token: string, id: string): Promise<WorkspaceJson> =>
  (await call("GET", `/workspaces/${id}`, token)).body.workspace

/** Archives the workspace and waits until it is archived; answers it as read then. */
const archived = async (token: string, ws: WorkspaceJson): Promise<WorkspaceJson> => {
  const archival = await call("POST", `/workspaces/${ws.public_id}/archival`, token, {
    command: { lock_version: ws.lock_version }
  })
  expect(archival.status).toBe(200)
  await waitForActorState(server, "workspace", ws.public_id, "archived")
  return read(token, ws.public_id)
}

const expectError = (response: JsonResponse, status: number, code: string) =>
  expect([response.status, response.body?.error?.code]).toEqual([status, code])

/**
 * Concealment: the request on a workspace the caller cannot see answers exactly what the same
 * request on an absent one answers.
 */
const expectConcealed = async (send: (id: string) => Promise<JsonResponse>, hiddenId: string): Promise<void> => {
  const hidden = await send(hiddenId)
  const absent = await send(absentId)
  expectError(hidden, 404, "not_found")
  expect(hidden.body).toEqual(absent.body)
}

beforeAll(async () => {
  server = await startTestServer()
  const owner = await createOwner(server)
  const member = await createMember(server)
  memberPublicId = member.public_id
  const leaver = await createHuman(server, {
    email: "leaver@example.com",
    password: "leaver password",
    displayName: "Lee",
    role: "member"
  })
  // No domain operation deactivates a human yet; the repository sets the status directly.
  await server.run(
    Effect.flatMap(AccountsRepository, (accounts) => accounts.setUserStatus(leaver.id, "inactive", new Date()))
  )
  inactivePublicId = leaver.public_id
  // The system user (never a principal) is looked up directly.
  const system = await server.run(
    Effect.flatMap(SqlClient, (sql) => sql<{ public_id: string }>`SELECT public_id FROM users WHERE kind = 'system'`)
  )
  systemPublicId = system[0]!.public_id
  ownerBrowser = await signedIn(server, ownerCredentials)
  const memberBrowser = await signedIn(server, memberCredentials)
  ownerAgent = await connectAgent(server, ownerBrowser, "errors-owner-agent")
  otherAgent = await connectAgent(server, ownerBrowser, "errors-other-agent")
  memberAgent = await connectAgent(server, memberBrowser, "errors-member-agent")
  ownerToken = await personalToken(server, owner)
  memberToken = await personalToken(server, member)
})
afterAll(() => server?.close())

describe("GET /workspaces query faults", () => {
  it("limit outside 1 to 100 or not an integer is 400 parameter_invalid", async () => {
    for (const limit of ["0", "101", "x", "-1", "2.5"]) {
      expectError(await call("GET", `/workspaces?limit=${limit}`, ownerToken), 400, "parameter_invalid")
    }
    expect((await call("GET", "/workspaces?limit=1", ownerToken)).status).toBe(200)
    expect((await call("GET", "/workspaces?limit=100", ownerToken)).status).toBe(200)
  })

  it("a cursor the list did not issue, or read in the other direction, is 400 parameter_invalid", async () => {
    await newWorkspace(ownerToken, { name: "Cursor one" })
    await newWorkspace(ownerToken, { name: "Cursor two" })
    const forged = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
    for (const after of [
      "garbage",
      "%25%25%25",
      forged({ k: ["not-a-public-id"], d: "asc" }),
      forged({ k: [12], d: "asc" }),
      forged({ d: "asc" }),
      forged(["x"])
    ]) {
      expectError(await call("GET", `/workspaces?after=${after}`, ownerToken), 400, "parameter_invalid")
    }
    const first = await call("GET", "/workspaces?limit=1", ownerToken)
    const cursor = first.body.pagination.next_after as string
    expect(cursor).toEqual(expect.any(String))
    expect((await call("GET", `/workspaces?limit=1&after=${cursor}`, ownerToken)).status).toBe(200)
    expectError(await call("GET", `/workspaces?order=desc&after=${cursor}`, ownerToken), 400, "parameter_invalid")
  })

  it("dedicated_to_current_agent that is not true or false is 400 parameter_invalid", async () => {
    for (const value of ["yes", "1", "TRUE"]) {
      expectError(
        await call("GET", `/workspaces?dedicated_to_current_agent=${value}`, ownerAgent.token),
        400,
        "parameter_invalid"
      )
    }
  })
})

describe("POST /workspaces faults", () => {
  it("a blank Idempotency-Key is 400 idempotency_key_required", async () => {
    expectError(await create(ownerToken, { name: "Blank key" }, ""), 400, "idempotency_key_required")
  })

  it("metadata over 2 KiB of canonical JSON (measured in bytes) is 413 content_too_large; 2 KiB exactly is accepted", async () => {
    // {"blob":"…"} is 11 bytes around the string.
    const exact = await create(ownerToken, { name: "Exact", metadata: { blob: "y".repeat(2048 - 11) } })
    expect(exact.status).toBe(201)
    expectError(
      await create(ownerToken, { name: "Over", metadata: { blob: "y".repeat(2048 - 10) } }),
      413,
      "content_too_large"
    )
    // 1019 two-byte characters: 1030 characters, 2049 bytes.
    expectError(
      await create(ownerToken, { name: "Wide", metadata: { blob: "é".repeat(1019) } }),
      413,
      "content_too_large"
    )
  })
})

describe("PATCH /workspaces/{id} faults", () => {
  it("a malformed, negative or out-of-range lock_version is 400 parameter_invalid", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Locked" })
    for (const lockVersion of ["0", -1, 1.5, 2147483648, null, true]) {
      expectError(
        await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
          workspace: { name: "x", lock_version: lockVersion }
        }),
        400,
        "parameter_invalid"
      )
    }
    expect((await read(ownerToken, ws.public_id)).lock_version).toBe(0)
  })

  it("metadata over 2 KiB is 413 content_too_large and changes nothing", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Meta", metadata: { a: 1 } })
    expectError(
      await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
        workspace: { metadata: { blob: "y".repeat(3000) }, lock_version: 0 }
      }),
      413,
      "content_too_large"
    )
    const after = (await call("GET", `/workspaces/${ws.public_id}`, ownerToken)).body.workspace
    expect(after).toMatchObject({ metadata: { a: 1 }, lock_version: 0 })
  })

  it("a name that is blank, over 255 characters, not a string or has control characters is 422 validation_failed (NUL: 400 at decoding)", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Named" })
    for (const name of ["", "   ", "x".repeat(256), "tab\there", 42, null]) {
      expectError(
        await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name, lock_version: 0 } }),
        422,
        "validation_failed"
      )
    }
    // U+0000 is refused when the body is decoded, before the name is judged
    expectError(
      await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
        workspace: { name: "nul\u0000", lock_version: 0 }
      }),
      400,
      "parameter_invalid"
    )
    const longest = await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, {
      workspace: { name: "x".repeat(255), lock_version: 0 }
    })
    expect(longest.status).toBe(200)
  })

  it("PATCH of another member's private workspace is 404 not_found (concealment, not 403)", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Private patch" })
    for (const token of [memberToken, memberAgent.token]) {
      await expectConcealed(
        (id) => call("PATCH", `/workspaces/${id}`, token, { workspace: { name: "Mine", lock_version: 0 } }),
        hidden.public_id
      )
    }
  })
})

describe("PUT access_mode faults", () => {
  const put = (id: string, token: string, members: Record<string, unknown>) =>
    call("PUT", `/workspaces/${id}/access_mode`, token, { access_mode: members })

  it("PUT access_mode with a stale lock_version is 409 stale_object", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Mode" })
    expect((await put(ws.public_id, ownerToken, { access_mode: "account_wide", lock_version: 0 })).status).toBe(200)
    expectError(await put(ws.public_id, ownerToken, { access_mode: "private", lock_version: 0 }), 409, "stale_object")
  })

  it("PUT access_mode without lock_version is 400 parameter_missing", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Mode missing" })
    expectError(await put(ws.public_id, ownerToken, { access_mode: "account_wide" }), 400, "parameter_missing")
  })

  it("PUT access_mode on an archived workspace is 409 workspace_not_active", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Mode archived" }))
    expectError(
      await put(ws.public_id, ownerToken, { access_mode: "account_wide", lock_version: ws.lock_version }),
      409,
      "workspace_not_active"
    )
  })

  it("PUT access_mode on another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Mode hidden" })
    await expectConcealed(
      (id) => put(id, memberToken, { access_mode: "account_wide", lock_version: 0 }),
      hidden.public_id
    )
  })
})

describe("POST ownership_transfer faults", () => {
  const transfer = (id: string, token: string, members: Record<string, unknown>) =>
    call("POST", `/workspaces/${id}/ownership_transfer`, token, { ownership_transfer: members })

  it("a non-owner who can see the workspace (account_wide) is 403 not_workspace_owner", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Shared transfer", access_mode: "account_wide" })
    for (const token of [memberToken, memberAgent.token, ownerAgent.token]) {
      expectError(
        await transfer(ws.public_id, token, { target_user_public_id: memberPublicId, lock_version: 0 }),
        403,
        "not_workspace_owner"
      )
    }
  })

  it("ownership_transfer with a stale lock_version is 409 stale_object", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Stale transfer" })
    await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name: "Moved", lock_version: 0 } })
    expectError(
      await transfer(ws.public_id, ownerToken, { target_user_public_id: memberPublicId, lock_version: 0 }),
      409,
      "stale_object"
    )
  })

  it("ownership_transfer without a target is 400 parameter_missing, a target that is not a UUID 400 parameter_invalid", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Targetless" })
    expectError(await transfer(ws.public_id, ownerToken, { lock_version: 0 }), 400, "parameter_missing")
    for (const target of ["someone", 42, `${memberPublicId}x`]) {
      expectError(
        await transfer(ws.public_id, ownerToken, { target_user_public_id: target, lock_version: 0 }),
        400,
        "parameter_invalid"
      )
    }
  })

  it("ownership_transfer to anyone but an active human of the account (an agent, the system user, a removed or unknown user) is 422 target_not_eligible", async () => {
    const ws = await newWorkspace(ownerToken, { name: "To ineligible" })
    for (const target of [ownerAgent.publicId, memberAgent.publicId, systemPublicId, inactivePublicId, absentId]) {
      expectError(
        await transfer(ws.public_id, ownerToken, { target_user_public_id: target, lock_version: 0 }),
        422,
        "target_not_eligible"
      )
    }
    expect((await read(ownerToken, ws.public_id)).lock_version).toBe(0)
  })

  it("ownership_transfer of another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Transfer hidden" })
    await expectConcealed(
      (id) => transfer(id, memberToken, { target_user_public_id: memberPublicId, lock_version: 0 }),
      hidden.public_id
    )
  })
})

describe("POST archival and restoration faults", () => {
  const command = (id: string, verb: "archival" | "restoration", token: string, body: unknown) =>
    call("POST", `/workspaces/${id}/${verb}`, token, body)

  it("archival with a stale lock_version is 409 stale_object and leaves the workspace active", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Stale archival" })
    await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name: "Moved", lock_version: 0 } })
    expectError(
      await command(ws.public_id, "archival", ownerToken, { command: { lock_version: 0 } }),
      409,
      "stale_object"
    )
    expect((await read(ownerToken, ws.public_id)).state).toBe("active")
  })

  it("archival of a workspace dedicated to another agent of the same steward is 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await newWorkspace(ownerAgent.token, { name: "Dedicated archival" })
    expectError(
      await command(ws.public_id, "archival", otherAgent.token, { command: { lock_version: 0 } }),
      403,
      "workspace_agent_identifier_mismatch"
    )
    expect((await read(ownerToken, ws.public_id)).state).toBe("active")
  })

  it("archival without lock_version is 400 parameter_missing", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Bare archival" })
    expectError(await command(ws.public_id, "archival", ownerToken, { command: {} }), 400, "parameter_missing")
    expectError(await command(ws.public_id, "archival", ownerToken, {}), 400, "parameter_missing")
  })

  it("archival of another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Archival hidden" })
    await expectConcealed(
      (id) => command(id, "archival", memberToken, { command: { lock_version: 0 } }),
      hidden.public_id
    )
  })

  it("restoration of an active workspace is 409 workspace_not_active", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Already active" })
    expectError(
      await command(ws.public_id, "restoration", ownerToken, { command: { lock_version: 0 } }),
      409,
      "workspace_not_active"
    )
  })

  it("restoration of an archived workspace dedicated to another agent is 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await archived(ownerAgent.token, await newWorkspace(ownerAgent.token, { name: "Dedicated restore" }))
    expectError(
      await command(ws.public_id, "restoration", otherAgent.token, { command: { lock_version: ws.lock_version } }),
      403,
      "workspace_agent_identifier_mismatch"
    )
    expect((await read(ownerToken, ws.public_id)).state).toBe("archived")
  })

  it("restoration of another member's private archived workspace is 404 not_found", async () => {
    const hidden = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Restore hidden" }))
    await expectConcealed(
      (id) => command(id, "restoration", memberToken, { command: { lock_version: hidden.lock_version } }),
      hidden.public_id
    )
  })
})

describe("commands while archiving or restoring", () => {
  /**
   * Holds this workspace's settling job back (a trigger on the test's own database defers it by a
   * day), so the workspace stays archiving or restoring until `release`.
   */
  const holdSettling = async (id: string) => {
    const name = `hold_${id.replace(/-/g, "")}`
    await server.run(
      Effect.flatMap(SqlClient, (sql) =>
        Effect.andThen(
          sql.unsafe(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN NEW.next_attempt_at := NEW.next_attempt_at + interval '1 day'; RETURN NEW; END $$`),
          sql.unsafe(`CREATE TRIGGER ${name} BEFORE INSERT ON actor_jobs FOR EACH ROW
            WHEN (NEW.kind = 'workspace' AND NEW.actor_id = '${id}') EXECUTE FUNCTION ${name}()`)
        )
      )
    )
    return async (settled: string) => {
      await server.run(
        Effect.flatMap(SqlClient, (sql) =>
          Effect.andThen(
            sql.unsafe(`DROP TRIGGER ${name} ON actor_jobs`),
            sql`UPDATE actor_jobs SET next_attempt_at = created_at WHERE actor_id = ${id} AND state = 'pending'`
          )
        )
      )
      await waitForActorState(server, "workspace", id, settled)
    }
  }

  const transfer = (id: string, lockVersion: number) =>
    call("POST", `/workspaces/${id}/ownership_transfer`, ownerToken, {
      ownership_transfer: { target_user_public_id: memberPublicId, lock_version: lockVersion }
    })
  const command = (id: string, verb: "archival" | "restoration", lockVersion: number) =>
    call("POST", `/workspaces/${id}/${verb}`, ownerToken, { command: { lock_version: lockVersion } })
  const remove = (id: string, lockVersion: number) =>
    call("DELETE", `/workspaces/${id}?lock_version=${lockVersion}`, ownerToken)

  it("archival, restoration, ownership_transfer and DELETE while archiving are 409 transition_in_progress", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Mid archival" })
    const release = await holdSettling(ws.public_id)
    const archiving = (await command(ws.public_id, "archival", 0)).body.workspace
    expect(archiving.state).toBe("archiving")
    for (const version of [archiving.lock_version, 0]) {
      expectError(await command(ws.public_id, "archival", version), 409, "transition_in_progress")
      expectError(await command(ws.public_id, "restoration", version), 409, "transition_in_progress")
      expectError(await transfer(ws.public_id, version), 409, "transition_in_progress")
      expectError(await remove(ws.public_id, version), 409, "transition_in_progress")
    }
    expect(await read(ownerToken, ws.public_id)).toMatchObject({ state: "archiving", lock_version: 1 })
    await release("archived")
    expect((await read(ownerToken, ws.public_id)).state).toBe("archived")
  })

  it("archival, restoration, ownership_transfer and DELETE while restoring are 409 transition_in_progress", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Mid restoration" }))
    const release = await holdSettling(ws.public_id)
    const restoring = (await command(ws.public_id, "restoration", ws.lock_version)).body.workspace
    expect(restoring.state).toBe("restoring")
    expectError(await command(ws.public_id, "archival", restoring.lock_version), 409, "transition_in_progress")
    expectError(await command(ws.public_id, "restoration", restoring.lock_version), 409, "transition_in_progress")
    expectError(await transfer(ws.public_id, restoring.lock_version), 409, "transition_in_progress")
    expectError(await remove(ws.public_id, restoring.lock_version), 409, "transition_in_progress")
    await release("active")
    const active = await read(ownerToken, ws.public_id)
    expect((await transfer(ws.public_id, active.lock_version)).status).toBe(200)
  })

  it("ownership_transfer of an archived workspace stays 409 workspace_not_active", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Archived transfer" }))
    expectError(await transfer(ws.public_id, ws.lock_version), 409, "workspace_not_active")
  })
})

describe("DELETE /workspaces/{id} faults", () => {
  const remove = (id: string, token: string, lockVersion: string | number) =>
    call("DELETE", `/workspaces/${id}?lock_version=${lockVersion}`, token)

  it("DELETE with a stale lock_version is 409 stale_object", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Stale delete" })
    await call("PATCH", `/workspaces/${ws.public_id}`, ownerToken, { workspace: { name: "Moved", lock_version: 0 } })
    expectError(await remove(ws.public_id, ownerToken, 0), 409, "stale_object")
    expect((await read(ownerToken, ws.public_id)).state).toBe("active")
  })

  it("DELETE with a lock_version that is not a non-negative integer is 400 parameter_invalid", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Bad delete" })
    for (const lockVersion of ["abc", "-1", "1.0", "2147483648"]) {
      expectError(await remove(ws.public_id, ownerToken, lockVersion), 400, "parameter_invalid")
    }
  })

  it("DELETE of a workspace dedicated to another agent is 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await newWorkspace(ownerAgent.token, { name: "Dedicated delete" })
    expectError(await remove(ws.public_id, otherAgent.token, 0), 403, "workspace_agent_identifier_mismatch")
    expect((await read(ownerAgent.token, ws.public_id)).state).toBe("active")
  })

  it("DELETE of an archived workspace tombstones it; afterwards it is 404", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Archived delete" }))
    const deleted = await remove(ws.public_id, ownerToken, ws.lock_version)
    expect(deleted.status).toBe(200)
    expect(deleted.body.workspace.state).toBe("tombstoned")
    expectError(await call("GET", `/workspaces/${ws.public_id}`, ownerToken), 404, "not_found")
    expectError(await remove(ws.public_id, ownerToken, deleted.body.workspace.lock_version), 404, "not_found")
    const listed = await call("GET", "/workspaces?state=archived&limit=100", ownerToken)
    expect(listed.body.workspaces.map((w: WorkspaceJson) => w.public_id)).not.toContain(ws.public_id)
  })

  it("DELETE of another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Delete hidden" })
    await expectConcealed((id) => remove(id, memberToken, 0), hidden.public_id)
  })
})

describe("messaging and principals faults", () => {
  const putMessaging = (id: string, token: string, messaging: unknown) =>
    call("PUT", `/workspaces/${id}/messaging`, token, { messaging })

  it("GET messaging and GET principals of another member's private workspace are 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Reads hidden" })
    for (const token of [memberToken, memberAgent.token]) {
      await expectConcealed((id) => call("GET", `/workspaces/${id}/messaging`, token), hidden.public_id)
      await expectConcealed((id) => call("GET", `/workspaces/${id}/principals`, token), hidden.public_id)
    }
  })

  it("PUT messaging with a stale lock_version is 409 stale_object", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Stale messaging" })
    expect((await putMessaging(ws.public_id, ownerToken, { agents: [], lock_version: 0 })).status).toBe(200)
    expectError(await putMessaging(ws.public_id, ownerToken, { agents: [], lock_version: 0 }), 409, "stale_object")
  })

  it("PUT messaging over 64 KiB of canonical JSON is 413 content_too_large; a large policy under it is kept", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Large messaging" })
    const senders = (count: number) =>
      Array.from({ length: count }, (_, i) => `01900000-0000-7000-8000-${String(i).padStart(12, "0")}`)
    const policy = (count: number) => ({
      agents: [{ agent_public_id: ownerAgent.publicId, mode: "private", allowed_sender_public_ids: senders(count) }],
      lock_version: 0
    })
    // Each sender id is 39 bytes of JSON: 1700 of them are over 64 KiB, 1600 under.
    expect(JSON.stringify(policy(1700)).length).toBeGreaterThan(64 * 1024)
    expectError(await putMessaging(ws.public_id, ownerToken, policy(1700)), 413, "content_too_large")
    expect(JSON.stringify(policy(1600)).length).toBeLessThan(64 * 1024)
    const kept = await putMessaging(ws.public_id, ownerToken, policy(1600))
    expect(kept.status).toBe(200)
    expect(kept.body.messaging.agents[0].allowed_sender_public_ids).toHaveLength(1600)
  })

  it("PUT messaging on an archived workspace is 409 workspace_not_active", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Archived messaging" }))
    expectError(
      await putMessaging(ws.public_id, ownerToken, { agents: [], lock_version: ws.lock_version }),
      409,
      "workspace_not_active"
    )
  })

  it("PUT messaging on a workspace dedicated to another agent is 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await newWorkspace(ownerAgent.token, { name: "Dedicated messaging" })
    expectError(
      await putMessaging(ws.public_id, otherAgent.token, { agents: [], lock_version: 0 }),
      403,
      "workspace_agent_identifier_mismatch"
    )
    expect((await putMessaging(ws.public_id, ownerAgent.token, { agents: [], lock_version: 0 })).status).toBe(200)
  })

  it("PUT messaging naming no agent of the account (nobody, or a human) is 422 principal_unknown", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Unknown messaging" })
    for (const agent of [absentId, memberPublicId]) {
      expectError(
        await putMessaging(ws.public_id, ownerToken, { agents: [{ agent_public_id: agent }], lock_version: 0 }),
        422,
        "principal_unknown"
      )
    }
  })

  it("PUT messaging without agents or lock_version is 400 parameter_missing; agents not an array is 400 parameter_invalid", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Shapeless messaging" })
    expectError(await putMessaging(ws.public_id, ownerToken, { lock_version: 0 }), 400, "parameter_missing")
    expectError(await putMessaging(ws.public_id, ownerToken, { agents: [] }), 400, "parameter_missing")
    for (const agents of [{}, "everyone", 3]) {
      expectError(await putMessaging(ws.public_id, ownerToken, { agents, lock_version: 0 }), 400, "parameter_invalid")
    }
  })

  it("PUT messaging on another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Messaging hidden" })
    await expectConcealed((id) => putMessaging(id, memberToken, { agents: [], lock_version: 0 }), hidden.public_id)
  })

  it("a policy where an agent lists itself and contact is asymmetric (A lists B, B not A) is stored and read back exactly", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Asymmetric", access_mode: "account_wide" })
    const agents = [
      {
        agent_public_id: ownerAgent.publicId,
        mode: "private",
        allowed_sender_public_ids: [ownerAgent.publicId, otherAgent.publicId]
      },
      { agent_public_id: otherAgent.publicId, mode: "private", allowed_sender_public_ids: [memberAgent.publicId] },
      { agent_public_id: memberAgent.publicId, mode: "public", allowed_sender_public_ids: [ownerAgent.publicId] }
    ]
    const replaced = await putMessaging(ws.public_id, ownerToken, { agents, lock_version: 0 })
    expect(replaced.body).toEqual({ messaging: { agents, lock_version: 1 } })
    const readBack = await call("GET", `/workspaces/${ws.public_id}/messaging`, memberAgent.token)
    expect(readBack.body).toEqual({ messaging: { agents, lock_version: 1 } })
  })
})

describe("PUT tool_provider_overrides faults", () => {
  const putOverrides = (id: string, token: string, members: Record<string, unknown>) =>
    call("PUT", `/workspaces/${id}/tool_provider_overrides`, token, { tool_provider_overrides: members })

  it("a provider announcing only some of the six memory verbs is 422 provider_incomplete", async () => {
    const started = await startDevice(server, machineFields("errors-provider", { executor_kind: "tool_provider" }))
    await decide(ownerBrowser, started.user_code, "approve", "account_wide")
    const transport = (await poll(server, started.device_code)).body.access_token as string
    const profile = {
      kind: "write",
      destructive: false,
      effect_scope: "closed",
      idempotency: "none",
      reconciliation: "none"
    }
    // Five of six: memory_delete is missing.
    const verbs = ["memory_read", "memory_write", "memory_edit", "memory_ls", "memory_grep"]
    const announced = await request(server.baseUrl, "PUT", "/agent_api/v1/executor/announcement", {
      headers: bearer(transport),
      body: { tools: verbs.map((name) => ({ name, effect_profile: profile })) }
    })
    expect(announced.status).toBe(200)
    const provider = (await request(server.baseUrl, "GET", "/agent_api/v1/executor", { headers: bearer(transport) }))
      .body.executor
    const ws = await newWorkspace(ownerToken, { name: "Incomplete provider" })
    expectError(
      await putOverrides(ws.public_id, ownerToken, {
        overrides: { "svc.memory": provider.public_id },
        lock_version: 0
      }),
      422,
      "provider_incomplete"
    )
    expect((await read(ownerToken, ws.public_id)).lock_version).toBe(0)
  })

  it("PUT tool_provider_overrides with a stale lock_version is 409 stale_object", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Stale overrides" })
    expect((await putOverrides(ws.public_id, ownerToken, { overrides: {}, lock_version: 0 })).status).toBe(200)
    expectError(await putOverrides(ws.public_id, ownerToken, { overrides: {}, lock_version: 0 }), 409, "stale_object")
  })

  it("PUT tool_provider_overrides without overrides or lock_version is 400 parameter_missing; overrides not an object 400 parameter_invalid", async () => {
    const ws = await newWorkspace(ownerToken, { name: "Shapeless overrides" })
    expectError(await putOverrides(ws.public_id, ownerToken, { lock_version: 0 }), 400, "parameter_missing")
    expectError(await putOverrides(ws.public_id, ownerToken, { overrides: {} }), 400, "parameter_missing")
    for (const overrides of [[], "svc.memory", 1]) {
      expectError(
        await putOverrides(ws.public_id, ownerToken, { overrides, lock_version: 0 }),
        400,
        "parameter_invalid"
      )
    }
  })

  it("PUT tool_provider_overrides on an archived workspace is 409 workspace_not_active", async () => {
    const ws = await archived(ownerToken, await newWorkspace(ownerToken, { name: "Archived overrides" }))
    expectError(
      await putOverrides(ws.public_id, ownerToken, { overrides: {}, lock_version: ws.lock_version }),
      409,
      "workspace_not_active"
    )
  })

  it("PUT tool_provider_overrides on a workspace dedicated to another agent is 403 workspace_agent_identifier_mismatch", async () => {
    const ws = await newWorkspace(ownerAgent.token, { name: "Dedicated overrides" })
    expectError(
      await putOverrides(ws.public_id, otherAgent.token, { overrides: {}, lock_version: 0 }),
      403,
      "workspace_agent_identifier_mismatch"
    )
  })

  it("PUT tool_provider_overrides on another member's private workspace is 404 not_found", async () => {
    const hidden = await newWorkspace(ownerToken, { name: "Overrides hidden" })
    await expectConcealed((id) => putOverrides(id, memberToken, { overrides: {}, lock_version: 0 }), hidden.public_id)
  })
})
