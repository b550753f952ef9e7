// The executor address machine, one test per row of the spec's table ("Executor address",
// "Agent application address"). Pure: initialTransition/transition, no actor, no I/O.

import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import type { ExecutorAddressEvent } from "@troupe/machines/executorAddress/events"
import { executorAddressMachine } from "@troupe/machines/executorAddress/executorAddress.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof executorAddressMachine>>[0]

const paired = (kind: "agent_application" | "runner" | "tool_provider" = "runner", epoch = 1) =>
  initialTransition(executorAddressMachine, { kind, epoch })
const step = (snapshot: Snapshot, event: ExecutorAddressEvent) => transition(executorAddressMachine, snapshot, event)

describe("executorAddress machine", () => {
  it("starts active at the given epoch with nothing scheduled", () => {
    const [snapshot, actions] = paired("tool_provider", 3)
    expect(snapshot.value).toBe("active")
    expect(snapshot.status).toBe("active")
    expect(snapshot.context).toEqual({ kind: "tool_provider", epoch: 3 })
    expect(actions).toEqual([])
  })

  it("Executor address: active → active, same public_id, epoch advanced on a re-pair", () => {
    const [active] = paired("runner", 1)
    const [repaired, actions] = step(active, { type: "executor.repaired", epoch: 2 })
    expect(repaired.value).toBe("active")
    expect(repaired.status).toBe("active")
    // The address keeps its kind (and so its identity); only the epoch moves on.
    expect(repaired.context).toEqual({ kind: "runner", epoch: 2 })
    expect(actions).toEqual([])
    const [again] = step(repaired, { type: "executor.repaired", epoch: 3 })
    expect(again.context).toEqual({ kind: "runner", epoch: 3 })
  })

  it("Agent application address: active → active, epoch advanced on agent removal", () => {
    const [active] = paired("agent_application", 4)
    const [after, actions] = step(active, { type: "executor.agentRemoved", epoch: 5 })
    expect(after.value).toBe("active")
    expect(after.status).toBe("active")
    expect(after.context).toEqual({ kind: "agent_application", epoch: 5 })
    expect(actions).toEqual([])
  })

  it("Executor address: active → revoked by explicit revocation", () => {
    const [active] = paired("runner", 2)
    const [revoked, actions] = step(active, { type: "executor.revoke" })
    expect(revoked.value).toBe("revoked")
    expect(revoked.status).toBe("done")
    expect(revoked.context).toEqual({ kind: "runner", epoch: 2 })
    expect(actions.map((action) => action.type)).toEqual([executorAddressEffects.recordRevoked])
  })

  it("a revoked address accepts nothing further (a later connection creates a new address)", () => {
    const [revoked] = step(paired("runner", 2)[0], { type: "executor.revoke" })
    const events: ReadonlyArray<ExecutorAddressEvent> = [
      { type: "executor.repaired", epoch: 9 },
      { type: "executor.agentRemoved", epoch: 9 },
      { type: "executor.revoke" }
    ]
    for (const event of events) {
      const [after, actions] = step(revoked, event)
      expect(after).toBe(revoked)
      expect(actions).toEqual([])
    }
  })

  it("persists and restores", () => {
    const [repaired] = step(paired("agent_application", 1)[0], { type: "executor.repaired", epoch: 2 })
    const persisted = executorAddressMachine.getPersistedSnapshot(repaired)
    const restored = executorAddressMachine.resolveState(JSON.parse(JSON.stringify(persisted)))
    expect(restored.value).toBe("active")
    expect(restored.context).toEqual({ kind: "agent_application", epoch: 2 })
    expect(step(restored, { type: "executor.revoke" })[0].value).toBe("revoked")
  })
})
