// Platform: budgets through the real server: the cost unit (once), the administrator gate and the
// steward rule, opening, credits and debits as exact decimal strings (18-digit amounts), windows,
// revocation, and Idempotency-Key replays and mismatches.
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adjustBudget, budgetsOf, budgetWrite, configureUnit } from "../../support/budgets.ts"
import { bearer, request } from "../../support/http.ts"
import { connectAgent, signedIn } from "../../support/members.ts"
import { apiToken, createHuman, createMember, createOwner, memberCredentials } from "../../support/people.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"

let server: TestServer
let owner: string
let admin: string
let member: string
let memberId: string
let agentId: string
let ownerId: string

const adminCredentials = { email: "admin@example.com", password: "admin password" }
const window = (startsAt: string, expiresAt: string | null, amount = "10") => ({
  budget: { amount, starts_at: startsAt, expires_at: expiresAt, reason: "window" }
})
const sql = <A extends object>(f: (sql: SqlClient) => Effect.Effect<ReadonlyArray<A>, unknown>) =>
  server.run(Effect.flatMap(SqlClient, f))

beforeAll(async () => {
  server = await startTestServer()
  ownerId = (await createOwner(server)).public_id
  await createHuman(server, { ...adminCredentials, displayName: "Ada Admin", role: "admin" })
  memberId = (await createMember(server)).public_id
  owner = await apiToken(server)
  admin = await apiToken(server, adminCredentials)
  member = await apiToken(server, memberCredentials)
  agentId = (
    await connectAgent(
      server,
      await signedIn(server, { email: "owner@example.com", password: "correct horse battery" }),
      "budgeted"
    )
  ).publicId
})
afterAll(() => server?.close())

describe("cost unit", () => {
  it("an open before the unit is configured is 422 account_unit_unconfigured", async () => {
    const refused = await budgetWrite(server, owner, "POST", budgetsOf(memberId), window("2030-01-01T00:00:00Z", null))
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("account_unit_unconfigured")
  })

  it("is judged before the conflict, configured once, the same again 200, another 409", async () => {
    const invalid = await configureUnit(server, owner, "usd")
    expect(invalid.status).toBe(422)
    expect(invalid.body.error.code).toBe("validation_failed")
    expect((await configureUnit(server, member, "USD")).body.error.code).toBe("administrator_required")
    const set = await configureUnit(server, owner, "USD")
    expect(set.status).toBe(200)
    expect(set.body).toEqual({ account: { cost_unit: "USD" } })
    expect((await configureUnit(server, admin, "USD")).status).toBe(200)
    const other = await configureUnit(server, owner, "EUR")
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe("cost_unit_conflict")
    expect((await configureUnit(server, owner, "lower")).body.error.code).toBe("validation_failed")
  })
})

describe("the gate", () => {
  it("a member is 403 administrator_required; an unknown or the system user 404", async () => {
    const body = window("2031-01-01T00:00:00Z", "2031-02-01T00:00:00Z")
    const byMember = await budgetWrite(server, member, "POST", budgetsOf(memberId), body)
    expect(byMember.status).toBe(403)
    expect(byMember.body.error.code).toBe("administrator_required")
    expect((await budgetWrite(server, owner, "POST", budgetsOf(randomUUID()), body)).status).toBe(404)
    expect((await budgetWrite(server, owner, "POST", budgetsOf("not-a-uuid"), body)).status).toBe(404)
    const [system] = await sql((s) => s<{ public_id: string }>`SELECT public_id FROM users WHERE kind = 'system'`)
    if (system !== undefined) {
      expect((await budgetWrite(server, owner, "POST", budgetsOf(system.public_id), body)).status).toBe(404)
    }
  })

  it("the gate is judged before the Idempotency-Key: a member without one is 403 administrator_required", async () => {
    const budget = `${budgetsOf(memberId)}/${randomUUID()}`
    for (const [method, path] of [
      ["POST", budgetsOf(memberId)],
      ["PATCH", budget],
      ["POST", `${budget}/revocation`]
    ] as const) {
      const refused = await request(server.baseUrl, method, path, {
        headers: bearer(member),
        body: window("2031-01-01T00:00:00Z", null)
      })
      expect([refused.status, refused.body.error.code], `${method} ${path}`).toEqual([403, "administrator_required"])
    }
  })

  it("an agent's budget only by its steward: another administrator is 403 user_not_administrable", async () => {
    const body = window("2031-01-01T00:00:00Z", "2031-02-01T00:00:00Z")
    const byAdmin = await budgetWrite(server, admin, "POST", budgetsOf(agentId), body)
    expect(byAdmin.status).toBe(403)
    expect(byAdmin.body.error.code).toBe("user_not_administrable")
    expect((await budgetWrite(server, owner, "POST", budgetsOf(agentId), body)).status).toBe(201)
  })

  it("a removed human is 403 user_not_administrable", async () => {
    const removed = await createHuman(server, {
      email: "gone@example.com",
      password: "gone password",
      displayName: "Gone",
      role: "member"
    })
    await sql((s) => s`UPDATE users SET status = 'removed' WHERE id = ${removed.id} RETURNING id`)
    const refused = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(removed.public_id),
      window("2031-01-01T00:00:00Z", null)
    )
    expect(refused.status).toBe(403)
    expect(refused.body.error.code).toBe("user_not_administrable")
  })
})

describe("open", () => {
  it("writes entry 1 (credit, the key) and renders amounts plain", async () => {
    const key = randomUUID()
    const opened = await budgetWrite(
      server,
      admin,
      "POST",
      budgetsOf(memberId),
      {
        budget: {
          amount: "25.000",
          starts_at: "2032-01-01T00:00:00Z",
          expires_at: "2032-02-01T00:00:00Z",
          reason: "January"
        }
      },
      key
    )
    expect(opened.status).toBe(201)
    expect(opened.body.budget).toMatchObject({
      user_public_id: memberId,
      credited_amount: "25",
      debited_amount: "0",
      cost_unit: "USD",
      starts_at: "2032-01-01T00:00:00.000Z",
      expires_at: "2032-02-01T00:00:00.000Z",
      revoked_at: null
    })
    const [entry] = await sql(
      (s) => s<{ sequence: number; kind: string; operation_key: string; amount: string }>`
        SELECT e.sequence, e.kind, e.operation_key, e.amount::text AS amount FROM budget_entries e
        JOIN budgets b ON b.id = e.budget_id WHERE b.public_id = ${opened.body.budget.public_id}`
    )
    expect(entry).toMatchObject({ sequence: 1, kind: "credit", operation_key: key })
  })

  it("refuses amounts that are not decimal strings above zero (422 validation_failed)", async () => {
    for (const amount of [
      25,
      "-1",
      "+1",
      "1e3",
      "0",
      "0.000",
      "1.",
      ".5",
      "1234567890123456789",
      "1.1234567890123456789"
    ]) {
      const refused = await budgetWrite(
        server,
        owner,
        "POST",
        budgetsOf(ownerId),
        window("2033-01-01T00:00:00Z", null, amount as string)
      )
      expect(refused.status, `amount ${JSON.stringify(amount)}`).toBe(422)
      expect(refused.body.error.code).toBe("validation_failed")
    }
  })

  it("refuses a bad window or reason, and a missing member is 400 parameter_missing", async () => {
    const bad = [
      window("2033-01-01T00:00:00Z", "2033-01-01T00:00:00Z"),
      window("yesterday", null),
      window("2033-02-30T00:00:00Z", null),
      window("2033-01-01T00:00:00Z", "2033-01-01T24:00:00Z"),
      { budget: { amount: "1", starts_at: "2033-01-01T00:00:00Z", expires_at: null, reason: "" } },
      { budget: { amount: "1", starts_at: "2033-01-01T00:00:00Z", expires_at: null, reason: "x".repeat(256) } }
    ]
    for (const body of bad) {
      expect((await budgetWrite(server, owner, "POST", budgetsOf(ownerId), body)).body.error.code).toBe(
        "validation_failed"
      )
    }
    const missing = await budgetWrite(server, owner, "POST", budgetsOf(ownerId), { budget: { amount: "1" } })
    expect(missing.status).toBe(400)
    expect(missing.body.error.code).toBe("parameter_missing")
    const noKey = await request(server.baseUrl, "POST", budgetsOf(ownerId), {
      headers: bearer(owner),
      body: window("2033-01-01T00:00:00Z", null)
    })
    expect(noKey.status).toBe(400)
    expect(noKey.body.error.code).toBe("idempotency_key_required")
  })

  it("an unrevoked budget whose window intersects is 409 budget_window_overlap; [starts, expires) may touch", async () => {
    const first = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(ownerId),
      window("2034-01-01T00:00:00Z", "2034-02-01T00:00:00Z")
    )
    expect(first.status).toBe(201)
    const overlap = await budgetWrite(server, owner, "POST", budgetsOf(ownerId), window("2034-01-31T00:00:00Z", null))
    expect(overlap.status).toBe(409)
    expect(overlap.body.error.code).toBe("budget_window_overlap")
    const touching = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(ownerId),
      window("2034-02-01T00:00:00Z", "2034-03-01T00:00:00Z")
    )
    expect(touching.status).toBe(201)
  })
})

describe("adjust and revoke", () => {
  it("credits and debits 18-digit amounts exactly", async () => {
    const budget = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(memberId),
      window("2035-01-01T00:00:00Z", "2035-02-01T00:00:00Z", "999999999999999999.999999999999999999")
    )
    const id = budget.body.budget.public_id
    const credit = await adjustBudget(server, owner, memberId, id, "credit", "0.000000000000000001")
    expect(credit.status).toBe(200)
    expect(credit.body.budget.credited_amount).toBe("1000000000000000000")
    expect(credit.body.entry).toMatchObject({ sequence: 2, kind: "credit", amount: "0.000000000000000001" })
    const debit = await adjustBudget(server, owner, memberId, id, "debit", "0.1")
    const again = await adjustBudget(server, owner, memberId, id, "debit", "0.2")
    expect(debit.body.entry.sequence).toBe(3)
    expect(again.body.budget.debited_amount).toBe("0.3")
    const all = await adjustBudget(server, owner, memberId, id, "debit", "999999999999999999.7")
    expect(all.status).toBe(200)
    expect(all.body.budget.debited_amount).toBe("1000000000000000000")
    const beyond = await adjustBudget(server, owner, memberId, id, "debit", "0.000000000000000001")
    expect(beyond.status).toBe(409)
    expect(beyond.body.error.code).toBe("budget_insufficient_headroom")
  })

  it("Budget: open --revocation--> revoked: debits refused, credits allowed, a second revocation 409", async () => {
    const opened = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(memberId),
      window("2036-01-01T00:00:00Z", "2036-06-01T00:00:00Z", "5")
    )
    const id = opened.body.budget.public_id
    const path = `${budgetsOf(memberId)}/${id}/revocation`
    const key = randomUUID()
    const revoked = await budgetWrite(server, owner, "POST", path, { revocation: { reason: "over" } }, key)
    expect(revoked.status).toBe(200)
    expect(revoked.body.budget.revoked_at).not.toBeNull()
    const replay = await budgetWrite(server, owner, "POST", path, { revocation: { reason: "over" } }, key)
    expect(replay.status).toBe(200)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body).toEqual(revoked.body)
    const second = await budgetWrite(server, owner, "POST", path)
    expect(second.status).toBe(409)
    expect(second.body.error.code).toBe("budget_already_revoked")
    const debit = await adjustBudget(server, owner, memberId, id, "debit", "1")
    expect(debit.body.error.code).toBe("budget_already_revoked")
    const credit = await adjustBudget(server, owner, memberId, id, "credit", "1")
    expect(credit.status).toBe(200)
    expect(credit.body.budget.credited_amount).toBe("6")
    // A revoked budget leaves the overlap rule: its window may be opened again.
    expect(
      (
        await budgetWrite(
          server,
          owner,
          "POST",
          budgetsOf(memberId),
          window("2036-01-01T00:00:00Z", "2036-06-01T00:00:00Z")
        )
      ).status
    ).toBe(201)
  })

  it("an unknown budget or another user's is 404", async () => {
    const mine = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(ownerId),
      window("2037-01-01T00:00:00Z", "2037-06-01T00:00:00Z")
    )
    expect((await adjustBudget(server, owner, memberId, mine.body.budget.public_id, "credit", "1")).status).toBe(404)
    expect((await adjustBudget(server, owner, memberId, randomUUID(), "credit", "1")).status).toBe(404)
  })

  it("replays the same key, body and target; another body or target is 409 idempotency_envelope_mismatch", async () => {
    const opened = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(memberId),
      window("2038-01-01T00:00:00Z", "2038-06-01T00:00:00Z")
    )
    const id = opened.body.budget.public_id
    const key = randomUUID()
    const first = await adjustBudget(server, owner, memberId, id, "credit", "2", key)
    const replay = await adjustBudget(server, owner, memberId, id, "credit", "2", key)
    expect(replay.status).toBe(200)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body).toEqual(first.body)
    expect(replay.body.budget.credited_amount).toBe("12")
    const otherBody = await adjustBudget(server, owner, memberId, id, "credit", "3", key)
    expect(otherBody.status).toBe(409)
    expect(otherBody.body.error.code).toBe("idempotency_envelope_mismatch")
    const mine = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(ownerId),
      window("2038-01-01T00:00:00Z", "2038-06-01T00:00:00Z")
    )
    const otherTarget = await adjustBudget(server, owner, ownerId, mine.body.budget.public_id, "credit", "2", key)
    expect(otherTarget.status).toBe(409)
    expect(otherTarget.body.error.code).toBe("idempotency_envelope_mismatch")
  })

  it("every budget write needs an Idempotency-Key; an open replays its 201 verbatim, marked replayed", async () => {
    const body = window("2042-01-01T00:00:00Z", "2042-06-01T00:00:00Z", "3")
    const key = randomUUID()
    const opened = await budgetWrite(server, owner, "POST", budgetsOf(memberId), body, key)
    expect(opened.status).toBe(201)
    const replay = await budgetWrite(server, owner, "POST", budgetsOf(memberId), body, key)
    expect(replay.status).toBe(201)
    expect(replay.headers.get("idempotency-replayed")).toBe("true")
    expect(replay.body).toEqual(opened.body)
    const path = `${budgetsOf(memberId)}/${opened.body.budget.public_id}`
    for (const [method, route, sent] of [
      ["PATCH", path, { budget: { kind: "credit", amount: "1", reason: "keyless" } }],
      ["POST", `${path}/revocation`, { revocation: { reason: "keyless" } }]
    ] as const) {
      for (const headers of [bearer(owner), { ...bearer(owner), "idempotency-key": " " }]) {
        const refused = await request(server.baseUrl, method, route, { headers, body: sent })
        expect([refused.status, refused.body.error.code]).toEqual([400, "idempotency_key_required"])
      }
    }
    const [row] = await sql(
      (s) => s<{ credited: string; revoked: boolean }>`
        SELECT credited_amount::text AS credited, revoked_at IS NOT NULL AS revoked FROM budgets
        WHERE public_id = ${opened.body.budget.public_id}`
    )
    expect(row).toEqual({ credited: "3", revoked: false })
  })

  it("a key another administrator used on the same budget with another body is 409 idempotency_envelope_mismatch", async () => {
    const opened = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(memberId),
      window("2040-01-01T00:00:00Z", "2040-06-01T00:00:00Z")
    )
    const id = opened.body.budget.public_id
    const key = randomUUID()
    expect((await adjustBudget(server, admin, memberId, id, "credit", "2", key)).status).toBe(200)
    const other = await adjustBudget(server, owner, memberId, id, "debit", "3", key)
    expect(other.status).toBe(409)
    expect(other.body.error.code).toBe("idempotency_envelope_mismatch")
    const same = await adjustBudget(server, owner, memberId, id, "credit", "2", key)
    expect(same.status).toBe(200)
    expect(same.body.budget).toMatchObject({ credited_amount: "12", debited_amount: "0" })
    expect(same.body.entry).toMatchObject({ sequence: 2, kind: "credit", amount: "2", operation_key: key })
  })

  it("a write retried after its receipt was lost (a crash after the commit) answers the original", async () => {
    const forget = (key: string) => sql((s) => s`DELETE FROM idempotency_receipts WHERE key = ${key} RETURNING id`)
    const body = window("2041-01-01T00:00:00Z", "2041-06-01T00:00:00Z", "7")
    const key = randomUUID()
    const opened = await budgetWrite(server, owner, "POST", budgetsOf(memberId), body, key)
    expect(opened.status).toBe(201)
    await forget(key)
    const reopened = await budgetWrite(server, owner, "POST", budgetsOf(memberId), body, key)
    expect(reopened.status).toBe(201)
    expect(reopened.body).toEqual(opened.body)
    const path = `${budgetsOf(memberId)}/${opened.body.budget.public_id}/revocation`
    const revocationKey = randomUUID()
    const revoked = await budgetWrite(server, owner, "POST", path, { revocation: { reason: "done" } }, revocationKey)
    expect(revoked.status).toBe(200)
    await forget(revocationKey)
    const again = await budgetWrite(server, owner, "POST", path, { revocation: { reason: "done" } }, revocationKey)
    expect(again.status).toBe(200)
    expect(again.body).toEqual(revoked.body)
  })

  it("concurrent debits never overdraw the headroom", async () => {
    const opened = await budgetWrite(
      server,
      owner,
      "POST",
      budgetsOf(memberId),
      window("2039-01-01T00:00:00Z", "2039-06-01T00:00:00Z", "5")
    )
    const id = opened.body.budget.public_id
    const answers = await Promise.all(
      Array.from({ length: 12 }, () => adjustBudget(server, owner, memberId, id, "debit", "1"))
    )
    const statuses = answers.map((answer) => answer.status).sort()
    expect(statuses.filter((status) => status === 200)).toHaveLength(5)
    expect(
      answers
        .filter((answer) => answer.status === 409)
        .every((a) => a.body.error.code === "budget_insufficient_headroom")
    ).toBe(true)
    const [row] = await sql(
      (s) => s<{ debited: string; entries: number }>`
        SELECT debited_amount::text AS debited, (SELECT count(*)::int FROM budget_entries WHERE budget_id = b.id) AS entries
        FROM budgets b WHERE public_id = ${id}`
    )
    expect(row).toEqual({ debited: "5", entries: 6 })
  })
})
