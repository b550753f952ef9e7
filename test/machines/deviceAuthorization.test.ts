// The device authorization machine, one test per row of the spec's table ("Device authorization")
// and of the SUPPLEMENT's lifecycle (pending → approved → consumed; denied; canceled; invalidated;
// expired after 900 s). Pure: initialTransition/transition, no actor, no I/O.
import { deviceAuthorizationMachine } from "@troupe/machines/deviceAuthorization/deviceAuthorization.machine"
import { deviceAuthorizationEffects, deviceLifeMillis } from "@troupe/machines/deviceAuthorization/effects"
import type { DeviceAuthorizationEvent } from "@troupe/machines/deviceAuthorization/events"
import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof deviceAuthorizationMachine>>[0]

const approver = "0190d5a4-7b1c-7c3e-8f00-00000000a001"
/** The machine starts at instant 0 here; its row's expires_at is 900 s later. */
const expiresAt = deviceLifeMillis
const started = () =>
  initialTransition(deviceAuthorizationMachine, { branch: "machine", clientId: "svc-first-party-connector", expiresAt })
const pending = () => started()[0]
const step = (snapshot: Snapshot, event: DeviceAuthorizationEvent) =>
  transition(deviceAuthorizationMachine, snapshot, event)
const approve: DeviceAuthorizationEvent = {
  type: "device.approve",
  approverPublicId: approver,
  assignmentScope: "account_wide",
  at: 0
}
const approved = () => step(pending(), approve)[0]
const typesAndParams = (actions: ReadonlyArray<{ type: string; params?: unknown }>) =>
  actions.map((action) => [action.type, action.params])

const everyEvent: ReadonlyArray<DeviceAuthorizationEvent> = [
  approve,
  { type: "device.deny", approverPublicId: approver, at: 0 },
  { type: "device.cancel" },
  { type: "device.consume", at: 0 },
  { type: "device.invalidate", reason: "kind differs" },
  { type: "device.expire" }
]

describe("deviceAuthorization machine", () => {
  it("starts pending with nothing decided", () => {
    const [snapshot] = started()
    expect(snapshot.value).toBe("pending")
    expect(snapshot.status).toBe("active")
    expect(snapshot.context).toEqual({
      branch: "machine",
      clientId: "svc-first-party-connector",
      approverPublicId: null,
      assignmentScope: null,
      reason: null,
      expiresAt,
      lastPolledAt: null,
      intervalSeconds: 5
    })
  })

  it("Device authorization: pending --human approves in the browser--> approved, for the winning poll", () => {
    const [snapshot, actions] = step(pending(), approve)
    expect(snapshot.value).toBe("approved")
    expect(snapshot.status).toBe("active")
    expect(snapshot.context.approverPublicId).toBe(approver)
    expect(snapshot.context.assignmentScope).toBe("account_wide")
    expect(typesAndParams(actions)).toEqual([
      [
        deviceAuthorizationEffects.recordState,
        { state: "approved", approverPublicId: approver, assignmentScope: "account_wide" }
      ]
    ])
  })

  it("Device authorization: approved keeps its frozen consequence against a second approval", () => {
    const first = approved()
    const [after, actions] = step(first, {
      type: "device.approve",
      approverPublicId: "0190d5a4-7b1c-7c3e-8f00-00000000b002",
      assignmentScope: "user_private",
      at: 0
    })
    expect(after.value).toBe("approved")
    expect(after.context).toEqual(first.context)
    expect(actions).toEqual([])
  })

  it("Device authorization: pending --human denies--> denied", () => {
    const [snapshot, actions] = step(pending(), { type: "device.deny", approverPublicId: approver, at: 0 })
    expect(snapshot.value).toBe("denied")
    expect(snapshot.status).toBe("done")
    expect(snapshot.context.approverPublicId).toBe(approver)
    expect(snapshot.context.assignmentScope).toBeNull()
    expect(typesAndParams(actions)).toEqual([
      [deviceAuthorizationEffects.recordState, { state: "denied", approverPublicId: approver }]
    ])
  })

  it("Device authorization: approved --winning poll--> consumed: credentials issued once (connect)", () => {
    const [snapshot, actions] = step(approved(), { type: "device.consume", at: 0 })
    expect(snapshot.value).toBe("consumed")
    expect(snapshot.status).toBe("done")
    expect(snapshot.context.assignmentScope).toBe("account_wide")
    expect(typesAndParams(actions)).toEqual([
      [deviceAuthorizationEffects.connect, undefined],
      [deviceAuthorizationEffects.recordState, { state: "consumed" }]
    ])
  })

  it("Device authorization: a poll before approval consumes nothing (pending stays pending, the poll is paced)", () => {
    const [after, actions] = step(pending(), { type: "device.consume", at: 1_000 })
    expect(after.value).toBe("pending")
    expect(after.context.lastPolledAt).toBe(1_000)
    expect(typesAndParams(actions)).toEqual([
      [deviceAuthorizationEffects.recordPoll, { polledAt: 1_000, intervalSeconds: 5, slowDown: false }]
    ])
  })

  it("Device authorization: a pending poll sooner than the interval (less 1 s) slows the client down by 5 s, up to 60", () => {
    const [polled] = step(pending(), { type: "device.consume", at: 0 })
    const [onTime, onTimeActions] = step(polled, { type: "device.consume", at: 4_000 })
    expect(typesAndParams(onTimeActions)).toEqual([
      [deviceAuthorizationEffects.recordPoll, { polledAt: 4_000, intervalSeconds: 5, slowDown: false }]
    ])
    let snapshot = onTime
    for (const interval of [10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 60]) {
      const [slowed, actions] = step(snapshot, { type: "device.consume", at: 5_000 })
      expect(typesAndParams(actions)).toEqual([
        [deviceAuthorizationEffects.recordPoll, { intervalSeconds: interval, slowDown: true }]
      ])
      expect(slowed.context.lastPolledAt).toBe(4_000)
      snapshot = slowed
    }
  })

  it("Device authorization: pending --cancellation call--> canceled", () => {
    const [snapshot, actions] = step(pending(), { type: "device.cancel" })
    expect(snapshot.value).toBe("canceled")
    expect(snapshot.status).toBe("done")
    expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "canceled" }]])
  })

  it("Device authorization: approved --cancellation call--> canceled", () => {
    const [snapshot, actions] = step(approved(), { type: "device.cancel" })
    expect(snapshot.value).toBe("canceled")
    expect(snapshot.status).toBe("done")
    expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "canceled" }]])
  })

  it("Device authorization: pending --poll, registration drifted--> invalidated", () => {
    const [snapshot, actions] = step(pending(), { type: "device.invalidate", reason: "kind differs" })
    expect(snapshot.value).toBe("invalidated")
    expect(snapshot.status).toBe("done")
    expect(snapshot.context.reason).toBe("kind differs")
    expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "invalidated" }]])
  })

  it("Device authorization: approved --poll, registration drifted--> invalidated (reason kept)", () => {
    const [snapshot, actions] = step(approved(), { type: "device.invalidate", reason: "scope differs" })
    expect(snapshot.value).toBe("invalidated")
    expect(snapshot.status).toBe("done")
    expect(snapshot.context).toMatchObject({
      reason: "scope differs",
      approverPublicId: approver,
      assignmentScope: "account_wide"
    })
    expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "invalidated" }]])
  })

  it("Device authorization: any --900 seconds elapse--> expired", () => {
    const [initial, scheduled] = started()
    expect(deviceLifeMillis).toBe(900 * 1000)
    expect(typesAndParams(scheduled)).toEqual([
      ["xstate.raise", { event: { type: "device.expire" }, id: "expiry", delay: 900_000 }]
    ])
    for (const from of [initial, approved()]) {
      const [snapshot, actions] = step(from, { type: "device.expire" })
      expect(snapshot.value).toBe("expired")
      expect(snapshot.status).toBe("done")
      expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "expired" }]])
    }
  })

  const terminals: ReadonlyArray<[string, () => Snapshot]> = [
    ["consumed", () => step(approved(), { type: "device.consume", at: 0 })[0]],
    ["denied", () => step(pending(), { type: "device.deny", approverPublicId: approver, at: 0 })[0]],
    ["canceled", () => step(pending(), { type: "device.cancel" })[0]],
    ["invalidated", () => step(approved(), { type: "device.invalidate", reason: "agent binding differs" })[0]],
    ["expired", () => step(pending(), { type: "device.expire" })[0]]
  ]
  for (const [name, reach] of terminals) {
    it(`a ${name} device authorization accepts nothing further`, () => {
      const terminal = reach()
      expect(terminal.value).toBe(name)
      expect(terminal.status).toBe("done")
      for (const event of everyEvent) {
        const [after, actions] = step(terminal, event)
        expect(after).toBe(terminal)
        expect(actions).toEqual([])
      }
    })
  }

  it("a cancel after the winning consume stays consumed (consume won)", () => {
    const consumed = step(approved(), { type: "device.consume", at: 0 })[0]
    const [after, actions] = step(consumed, { type: "device.cancel" })
    expect(after.value).toBe("consumed")
    expect(actions).toEqual([])
  })

  it("persists and restores", () => {
    const before = approved()
    const persisted = deviceAuthorizationMachine.getPersistedSnapshot(before)
    const restored = deviceAuthorizationMachine.resolveState(JSON.parse(JSON.stringify(persisted)))
    expect(restored.value).toBe("approved")
    expect(restored.context).toEqual(before.context)
    const [consumed, actions] = step(restored, { type: "device.consume", at: 0 })
    expect(consumed.value).toBe("consumed")
    expect(actions.map((action) => action.type)).toEqual([
      deviceAuthorizationEffects.connect,
      deviceAuthorizationEffects.recordState
    ])
  })

  it("Device authorization: an approval, denial or poll at the expiry instant expires it (before the timer fires)", () => {
    const late = expiresAt
    const lapsedFrom: ReadonlyArray<[Snapshot, DeviceAuthorizationEvent]> = [
      [pending(), { ...approve, at: late }],
      [pending(), { type: "device.deny", approverPublicId: approver, at: late }],
      [pending(), { type: "device.consume", at: late }],
      [approved(), { type: "device.consume", at: late + 1 }]
    ]
    for (const [from, event] of lapsedFrom) {
      const [after, actions] = step(from, event)
      expect([after.value, after.status]).toEqual(["expired", "done"])
      expect(typesAndParams(actions)).toEqual([[deviceAuthorizationEffects.recordState, { state: "expired" }]])
    }
  })

  it("Device authorization: a poll a moment before expiry still wins once approved", () => {
    const [after, actions] = step(approved(), { type: "device.consume", at: expiresAt - 1 })
    expect(after.value).toBe("consumed")
    expect(actions.map((action) => action.type)).toContain(deviceAuthorizationEffects.connect)
  })

  it("a version 1 snapshot migrates to an unknown expiry: only its timer expires it", () => {
    const v1: PersistedSnapshot = {
      status: "active",
      value: "approved",
      context: {
        branch: "agent",
        clientId: "c",
        approverPublicId: approver,
        assignmentScope: "agent_private",
        reason: null
      }
    }
    const migrated = migrateSnapshot(machines.deviceAuthorization, v1, 1) as PersistedSnapshot
    expect(migrated.context).toMatchObject({ expiresAt: null })
    const restored = deviceAuthorizationMachine.resolveState({
      value: migrated.value,
      context: migrated.context as Snapshot["context"]
    })
    expect(step(restored, { type: "device.consume", at: Number.MAX_SAFE_INTEGER })[0].value).toBe("consumed")
  })
})
