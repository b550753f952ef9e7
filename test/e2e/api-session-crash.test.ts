// End to end (spec "States and transitions", rows "API session"): `troupe serve` on PostgreSQL
// killed with SIGKILL right after it answered a session's revocation (DELETE /api/v1/session,
// 200), while two other sessions' 30-day expiry timers wait, then started again on the same
// database. The revocation stands: one step, its bearer refused, its timer gone. The timers
// survived as rows; one whose instant passed while the server was down (the test moves its due
// time back, as the calendar would) fires once at boot and its bearer stops; the other still
// waits and its bearer works. The test waits on the steps the servers NOTIFY.
import { describe, expect, it } from "vitest"
import { crashWorld } from "../support/crash-world.ts"
import { postgresReachable } from "../support/database.ts"
import { bearer, request } from "../support/http.ts"
import { ownerCredentials, setUpOwner } from "../support/people.ts"
import { troupeServe } from "../support/troupe-process.ts"

const onPostgres = await postgresReachable()

const world = crashWorld()

const signIn = async (baseUrl: string) => {
  const made = await request(baseUrl, "POST", "/api/v1/session", { body: ownerCredentials })
  expect(made.status, JSON.stringify(made.body)).toBe(201)
  const read = await request(baseUrl, "GET", "/api/v1/session", { headers: bearer(made.body.token) })
  return { token: made.body.token as string, id: read.body.session.public_id as string }
}

describe.skipIf(!onPostgres)("API sessions when the server is killed", { timeout: 60_000 }, () => {
  it("a revocation answered before the kill stands; expiry timers survive, one fires once at boot", async () => {
    const { database, first, watch } = await world.open()
    await setUpOwner(first.baseUrl)
    const revoked = await signIn(first.baseUrl)
    const lapsing = await signIn(first.baseUrl)
    const living = await signIn(first.baseUrl)
    const answer = await request(first.baseUrl, "DELETE", "/api/v1/session", { headers: bearer(revoked.token) })
    expect([answer.status, answer.body]).toEqual([200, { revoked: true }])

    // The kill: right after the revocation's answer.
    await first.kill9()
    const sessions = () =>
      watch.query<{ public_id: string; state: string; expires_at: Date }>(
        `SELECT public_id, state, expires_at FROM sessions WHERE public_id = ANY($1::uuid[]) ORDER BY public_id`,
        [[revoked.id, lapsing.id, living.id]]
      )
    const timers = () =>
      watch.query<{ actor_id: string; timer_id: string; due_at: Date }>(
        `SELECT actor_id, timer_id, due_at FROM actor_timers WHERE kind = 'apiSession' AND actor_id = ANY($1::uuid[])
         ORDER BY actor_id`,
        [[revoked.id, lapsing.id, living.id]]
      )
    const rows = new Map((await sessions()).map((row) => [row.public_id, row]))
    expect(rows.get(revoked.id)?.state).toBe("revoked")
    // Each waiting session's timer fires at its expiry (set by its first step, a moment after the row).
    const waiting = await timers()
    expect(waiting.map((timer) => [timer.actor_id, timer.timer_id])).toEqual(
      [lapsing.id, living.id].sort().map((id) => [id, "expiry"])
    )
    for (const timer of waiting) {
      const lag = timer.due_at.getTime() - rows.get(timer.actor_id)!.expires_at.getTime()
      expect(lag).toBeGreaterThanOrEqual(0)
      expect(lag).toBeLessThan(1000)
    }
    // Thirty days pass for one session while the server is down.
    await watch.query(`UPDATE actor_timers SET due_at = now() WHERE kind = 'apiSession' AND actor_id = $1::uuid`, [
      lapsing.id
    ])

    const second = await troupeServe(database.config)
    await watch.until("the lapsed session to expire", 20_000, async () =>
      (await sessions()).find((row) => row.public_id === lapsing.id)?.state === "expired" ? true : undefined
    )
    const status = async (token: string) =>
      (await request(second.baseUrl, "GET", "/api/v1/session", { headers: bearer(token) })).status
    expect([await status(revoked.token), await status(lapsing.token), await status(living.token)]).toEqual([
      401, 401, 200
    ])
    const journal = (id: string) =>
      watch.query<{ event_type: string; from_state: string | null; to_state: string }>(
        `SELECT event_type, from_state, to_state FROM actor_journal WHERE kind = 'apiSession' AND actor_id = $1::uuid
         ORDER BY seq`,
        [id]
      )
    expect(await journal(revoked.id)).toEqual([
      { event_type: "xstate.init", from_state: null, to_state: "active" },
      { event_type: "session.revoke", from_state: "active", to_state: "revoked" }
    ])
    expect((await journal(lapsing.id)).slice(1)).toEqual([
      { event_type: "session.expire", from_state: "active", to_state: "expired" }
    ])
    expect((await journal(living.id)).slice(1)).toEqual([])
    expect(await timers()).toEqual(waiting.filter((timer) => timer.actor_id === living.id))
    await second.stop()
  })
})
