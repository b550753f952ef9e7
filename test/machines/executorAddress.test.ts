// The executor address machine, one test per row of the spec's table ("Executor address",
// "Agent application address") and per row it adds (the epoch guards, the announcement). Pure:
// initialTransition/transition, no actor, no I/O.

import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import type { Announcement, ExecutorAddressEvent } from "@troupe/machines/executorAddress/events"
import { executorAddressMachine } from "@troupe/machines/executorAddress/executorAddress.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof executorAddressMachine>>[0]

const paired = (kind: "agent_application" | "runner" | "tool_provider" = "runner", epoch = 1) =>
  initialTransition(executorAddressMachine, { kind, epoch })
const step = (snapshot: Snapshot, event: ExecutorAddressEvent) => transition(executorAddressMachine, snapshot, event)
const requests = (actions: ReadonlyArray<{ readonly type: string; readonly params?: unknown }>) =>
  actions.map((action) => ({ type: action.type, params: action.params }))

const announcement: Announcement = {
  tools: [
    {
      name: "search",
      effect_profile: {
        kind: "read_only",
        destructive: false,
        effect_scope: "closed",
        idempotency: "intrinsic",
        reconciliation: "none"
      }
    }
  ],
  environment: { os: "linux" },
  documents: [{ name: "README", description: "How to use me" }]
}

describe("executorAddress machine", () => {
  it("starts active at the given epoch with nothing scheduled", () => {
    const [snapshot, actions] = paired("tool_provider", 3)
    expect(snapshot.value).toBe("active")
    expect(snapshot.status).toBe("active")
    expect(snapshot.context).toEqual({ kind: "tool_provider", epoch: 3 })
    expect(actions).toEqual([])
  })

  it("Executor address: active --connection by the same identifier--> active, same public_id, epoch advanced", () => {
    const [active] = paired("runner", 1)
    const [repaired, actions] = step(active, { type: "executor.repaired", epoch: 2, displayName: "Laptop" })
    expect(repaired.value).toBe("active")
    expect(repaired.status).toBe("active")
    // The address keeps its kind (and so its identity); the epoch and the name move on, on its row too.
    expect(repaired.context).toEqual({ kind: "runner", epoch: 2 })
    expect(requests(actions)).toEqual([
      { type: executorAddressEffects.recordEpoch, params: { epoch: 2, displayName: "Laptop" } }
    ])
    const [again] = step(repaired, { type: "executor.repaired", epoch: 3, displayName: "Laptop" })
    expect(again.context).toEqual({ kind: "runner", epoch: 3 })
  })

  it("Agent application address: active --agent removal--> active, epoch advanced", () => {
    const [active] = paired("agent_application", 4)
    const [after, actions] = step(active, { type: "executor.agentRemoved", epoch: 5 })
    expect(after.value).toBe("active")
    expect(after.status).toBe("active")
    expect(after.context).toEqual({ kind: "agent_application", epoch: 5 })
    expect(requests(actions)).toEqual([{ type: executorAddressEffects.recordEpoch, params: { epoch: 5 } }])
  })

  it("Executor address: active, a re-pair told an epoch behind the address's is refused (an epoch never moves back)", () => {
    const [active] = step(paired("runner", 1)[0], { type: "executor.repaired", epoch: 3, displayName: "B" })
    const [after, actions] = step(active, { type: "executor.repaired", epoch: 2, displayName: "A" })
    expect(after).toBe(active)
    expect(actions).toEqual([])
  })

  it("Agent application address: active --agent removal, then a reconnection at its epoch--> active, renamed", () => {
    const [removed] = step(paired("agent_application", 1)[0], { type: "executor.agentRemoved", epoch: 2 })
    const [reconnected, actions] = step(removed, { type: "executor.repaired", epoch: 2, displayName: "Restored" })
    expect(reconnected.context).toEqual({ kind: "agent_application", epoch: 2 })
    expect(requests(actions)).toEqual([
      { type: executorAddressEffects.recordEpoch, params: { epoch: 2, displayName: "Restored" } }
    ])
  })

  it("Agent application address: active, an agent removal told an epoch not past the address's is refused", () => {
    const [active] = step(paired("agent_application", 1)[0], { type: "executor.repaired", epoch: 3, displayName: "A" })
    for (const epoch of [2, 3]) {
      const [after, actions] = step(active, { type: "executor.agentRemoved", epoch })
      expect(after).toBe(active)
      expect(actions).toEqual([])
    }
  })

  it("Executor address: active --announcement--> active, served tools, environment and documents replaced", () => {
    const [active] = paired("tool_provider", 2)
    const [after, actions] = step(active, { type: "executor.announce", announcement })
    expect(after.value).toBe("active")
    expect(after.context).toEqual({ kind: "tool_provider", epoch: 2 })
    expect(requests(actions)).toEqual([{ type: executorAddressEffects.recordAnnouncement, params: { announcement } }])
  })

  it("Executor address: active --explicit revocation--> revoked", () => {
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
      { type: "executor.repaired", epoch: 9, displayName: "Again" },
      { type: "executor.agentRemoved", epoch: 9 },
      { type: "executor.announce", announcement },
      { type: "executor.revoke" }
    ]
    for (const event of events) {
      const [after, actions] = step(revoked, event)
      expect(after).toBe(revoked)
      expect(actions).toEqual([])
    }
  })

  it("persists and restores", () => {
    const [repaired] = step(paired("agent_application", 1)[0], {
      type: "executor.repaired",
      epoch: 2,
      displayName: "Laptop"
    })
    const persisted = executorAddressMachine.getPersistedSnapshot(repaired)
    const restored = executorAddressMachine.resolveState(JSON.parse(JSON.stringify(persisted)))
    expect(restored.value).toBe("active")
    expect(restored.context).toEqual({ kind: "agent_application", epoch: 2 })
    expect(step(restored, { type: "executor.revoke" })[0].value).toBe("revoked")
  })
})
