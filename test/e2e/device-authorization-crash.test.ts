// End to end (spec "States and transitions", rows "Device authorization"; SUPPLEMENT "Device
// authorization lifecycle"): `troupe serve` on PostgreSQL killed with SIGKILL while a device
// authorization the human approved is being consumed by its winning poll (the consuming step
// waits at a gate the test holds on the device row's write), and another still pending waits on
// its 900 s expiry timer; then started again on the same database. The cut consumption left
// nothing: the authorization is still approved, no address or credential exists; the next poll
// issues the credentials once (a second poll is invalid_grant) and they work. The pending one's
// timer survived as a row; its instant passing while the server was down (the test moves its due
// time back, as the calendar would), it fires once at boot: the authorization expired, its poll
// answers expired_token. The test waits on the steps the servers NOTIFY.
import { describe, expect, it } from "vitest"
import { decide, machineFields, poll, signedInBrowser, startDevice } from "../http/oauth/support-device.ts"
import { crashWorld } from "../support/crash-world.ts"
import { postgresReachable } from "../support/database.ts"
import { closeGate } from "../support/gate.ts"
import { bearer, request } from "../support/http.ts"
import { ownerCredentials, setUpOwner } from "../support/people.ts"
import type { TestServer } from "../support/server.ts"
import { troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()
const identifier = "crash-runner"

const world = crashWorld()

describe.skipIf(!onPostgres)("device authorizations when the server is killed", { timeout: 60_000 }, () => {
  it("a consumption cut by the kill issues once after the restart; a pending one expires by its timer", async () => {
    const { database, first, watch } = await world.open()
    const gate = await closeGate(database, { table: "device_authorizations", when: "NEW.state = 'consumed'" })
    await setUpOwner(first.baseUrl)
    const at = (child: { baseUrl: string }) => ({ baseUrl: child.baseUrl }) as TestServer
    const approved = await startDevice(at(first), machineFields(identifier))
    const pending = await startDevice(at(first), machineFields("never-approved"))
    const owner = await signedInBrowser(at(first), ownerCredentials.email, ownerCredentials.password)
    expect((await decide(owner, approved.user_code, "approve", "account_wide")).status).toBe(200)

    // The kill: while the winning poll's step is making the connection.
    const cut = poll(at(first), approved.device_code).catch((error: unknown) => error)
    await gate.waiting("the consuming step at the gate")
    await first.kill9()
    expect(await cut).toBeInstanceOf(Error)
    await gate.remove()

    const devices = () =>
      watch.query<{ user_code: string; public_id: string; state: string; expires_at: Date }>(
        `SELECT user_code, public_id, state, expires_at FROM device_authorizations`
      )
    const byCode = async (userCode: string) =>
      (await devices()).find((row) => row.user_code === userCode.replace(/-/g, "").toUpperCase())!
    expect((await byCode(approved.user_code)).state).toBe("approved")
    const executors = () =>
      watch.query<{ id: string }>(`SELECT id FROM executors WHERE registration_identifier = $1`, [identifier])
    expect(await executors()).toEqual([])
    expect(await watch.query(`SELECT 1 FROM credentials WHERE executor_id IS NOT NULL`)).toEqual([])
    const lapsing = await byCode(pending.user_code)
    const timers = () =>
      watch.query<{ actor_id: string; due_at: Date }>(
        `SELECT actor_id, due_at FROM actor_timers WHERE kind = 'deviceAuthorization' AND timer_id = 'expiry'`
      )
    const timer = (await timers()).find((row) => row.actor_id === lapsing.public_id)
    expect(timer!.due_at.getTime() - lapsing.expires_at.getTime()).toBeGreaterThanOrEqual(0)
    expect(timer!.due_at.getTime() - lapsing.expires_at.getTime()).toBeLessThan(1000)
    // Its 900 s pass while the server is down.
    await watch.query(`UPDATE actor_timers SET due_at = now() WHERE kind = 'deviceAuthorization' AND actor_id = $1`, [
      lapsing.public_id
    ])

    const second = await troupeServe(database.config)
    await watch.until("the pending authorization to expire", 20_000, async () =>
      (await byCode(pending.user_code)).state === "expired" ? true : undefined
    )
    const issued = await poll(at(second), approved.device_code)
    expect(issued.status, JSON.stringify(issued.body)).toBe(200)
    expect(issued.body.plane).toBe("executor_transport")
    const again = await poll(at(second), approved.device_code)
    expect([again.status, again.body.error]).toEqual([400, "invalid_grant"])
    const self = await request(second.baseUrl, "GET", "/agent_api/v1/executor", {
      headers: bearer(issued.body.access_token)
    })
    expect(self.status).toBe(200)
    expect(await executors()).toHaveLength(1)
    expect(
      await watch.query(`SELECT 1 FROM credential_lineages WHERE executor_id IS NOT NULL AND revoked_at IS NULL`)
    ).toHaveLength(1)
    const expired = await poll(at(second), pending.device_code)
    expect([expired.status, expired.body.error]).toEqual([400, "expired_token"])

    const journal = (publicId: string) =>
      watch.query<{ event_type: string; to_state: string }>(
        `SELECT event_type, to_state FROM actor_journal WHERE kind = 'deviceAuthorization' AND actor_id = $1::uuid
         ORDER BY seq`,
        [publicId]
      )
    expect(await journal((await byCode(approved.user_code)).public_id)).toEqual([
      { event_type: "xstate.init", to_state: "pending" },
      { event_type: "device.approve", to_state: "approved" },
      { event_type: "device.consume", to_state: "consumed" }
    ])
    expect(await journal(lapsing.public_id)).toEqual([
      { event_type: "xstate.init", to_state: "pending" },
      { event_type: "device.expire", to_state: "expired" }
    ])
    // Both ended: no timer waits.
    expect(await timers()).toEqual([])
    await second.stop()
  })
})
