// The API session machine, one test per row of the spec's table ("API session").
import { apiSessionMachine } from "@troupe/machines/apiSession/apiSession.machine"
import { sessionLifeMillis } from "@troupe/machines/apiSession/effects"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

const issued = () => initialTransition(apiSessionMachine, { kind: "api" })

describe("apiSession machine", () => {
  it("starts active with a 30-day expiry timer", () => {
    const [snapshot, actions] = issued()
    expect(snapshot.value).toBe("active")
    expect(actions.map((action) => [action.type, action.params])).toEqual([
      ["xstate.raise", { event: { type: "session.expire" }, id: "expiry", delay: sessionLifeMillis }]
    ])
    expect(sessionLifeMillis).toBe(30 * 24 * 3600 * 1000)
  })

  it("API session: active --DELETE /api/v1/session--> revoked", () => {
    const [active] = issued()
    const [revoked, actions] = transition(apiSessionMachine, active, { type: "session.revoke" })
    expect(revoked.value).toBe("revoked")
    expect(revoked.status).toBe("done")
    expect(actions.map((action) => action.type)).toEqual(["session.recordRevoked", "xstate.emit"])
    expect(actions[1]?.params).toEqual({ event: { type: "session.revoked" } })
  })

  it("API session: active --time, 30 days from issuance--> expired", () => {
    const [active] = issued()
    const [expired, actions] = transition(apiSessionMachine, active, { type: "session.expire" })
    expect(expired.value).toBe("expired")
    expect(expired.status).toBe("done")
    expect(actions.map((action) => action.type)).toEqual(["session.recordExpired", "xstate.emit"])
  })

  it("a revoked or expired session accepts nothing more (a stale expiry timer is ignored)", () => {
    const [active] = issued()
    const [revoked] = transition(apiSessionMachine, active, { type: "session.revoke" })
    for (const event of [{ type: "session.expire" }, { type: "session.revoke" }] as const) {
      const [after, actions] = transition(apiSessionMachine, revoked, event)
      expect(after).toBe(revoked)
      expect(actions).toEqual([])
    }
  })

  it("persists and restores", () => {
    const [active] = issued()
    const restored = apiSessionMachine.resolveState(apiSessionMachine.getPersistedSnapshot(active) as never)
    expect(restored.value).toBe("active")
    expect(restored.context).toEqual({ kind: "api" })
    expect(transition(apiSessionMachine, restored, { type: "session.revoke" })[0].value).toBe("revoked")
  })
})
