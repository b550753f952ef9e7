// The workspace machine, one test per row of the spec's table ("Workspace").
import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import { workspaceMachine, workspaceTransitions } from "@troupe/machines/workspace/workspace.machine"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

const step = (
  snapshot: ReturnType<typeof initialTransition<typeof workspaceMachine>>[0],
  event: Parameters<typeof transition<typeof workspaceMachine>>[2]
) => transition(workspaceMachine, snapshot, event)

describe("workspace machine", () => {
  it("starts active", () => {
    const [snapshot, actions] = initialTransition(workspaceMachine, {})
    expect(snapshot.value).toBe("active")
    expect(actions).toEqual([])
  })

  it("Workspace: active --archival command--> archiving, then archived", () => {
    const [active] = initialTransition(workspaceMachine, {})
    const [archiving, actions] = step(active, { type: "workspace.archive", lockVersion: 3 })
    expect(archiving.value).toBe("archiving")
    expect(actions.map((action) => [action.type, action.params])).toEqual([
      ["workspace.recordState", { state: "archiving", lockVersion: 3, archival: "accepted" }],
      ["workspace.settle", { toward: "archived" }]
    ])
    const [archived, settled] = step(archiving, { type: "workspace.settled" })
    expect(archived.value).toBe("archived")
    expect(settled.map((action) => action.params)).toEqual([{ state: "archived", lockVersion: undefined }])
  })

  it("Workspace: archived --restoration command--> restoring, then active", () => {
    const [active] = initialTransition(workspaceMachine, {})
    const [archived] = step(step(active, { type: "workspace.archive", lockVersion: 0 })[0], {
      type: "workspace.settled"
    })
    const [restoring, actions] = step(archived, { type: "workspace.restore", lockVersion: 2 })
    expect(restoring.value).toBe("restoring")
    expect(actions.map((action) => [action.type, action.params])).toEqual([
      ["workspace.recordState", { state: "restoring", lockVersion: 2, archival: "cleared" }],
      ["workspace.settle", { toward: "active" }]
    ])
    const [restored, settled] = step(restoring, { type: "workspace.settled" })
    expect(restored.value).toBe("active")
    expect(settled.map((action) => action.params)).toEqual([{ state: "active", lockVersion: undefined }])
  })

  it("an archived workspace is not archived again, an active one is not restored, and tombstones accept nothing", () => {
    const [active] = initialTransition(workspaceMachine, {})
    expect(step(active, { type: "workspace.restore", lockVersion: 0 })[0]).toBe(active)
    const [archived] = step(step(active, { type: "workspace.archive", lockVersion: 0 })[0], {
      type: "workspace.settled"
    })
    expect(step(archived, { type: "workspace.archive", lockVersion: 1 })[0]).toBe(archived)
    const [tombstoned] = step(archived, { type: "workspace.tombstone", lockVersion: 2 })
    expect([tombstoned.value, tombstoned.status]).toEqual(["tombstoned", "done"])
    expect(step(tombstoned, { type: "workspace.restore", lockVersion: 3 })[1]).toEqual([])
  })

  it("archiving and restoring accept no command until settled (transition in progress)", () => {
    const [active] = initialTransition(workspaceMachine, {})
    const [archiving] = step(active, { type: "workspace.archive", lockVersion: 0 })
    const [archived] = step(archiving, { type: "workspace.settled" })
    const [restoring] = step(archived, { type: "workspace.restore", lockVersion: 2 })
    for (const transitional of [archiving, restoring]) {
      expect(workspaceTransitions).toContain(transitional.value)
      for (const type of ["workspace.archive", "workspace.restore", "workspace.tombstone"] as const) {
        expect(step(transitional, { type, lockVersion: 9 })[0]).toBe(transitional)
      }
    }
    expect(workspaceTransitions).not.toContain(active.value)
    expect(workspaceTransitions).not.toContain(archived.value)
  })

  it("the context follows the row's lock_version: each step bumps it by one", () => {
    const [active] = initialTransition(workspaceMachine, { lockVersion: 1 })
    expect(active.context.lockVersion).toBe(1)
    const [archiving] = step(active, { type: "workspace.archive", lockVersion: 1 })
    expect(archiving.context.lockVersion).toBe(2)
    const [archived] = step(archiving, { type: "workspace.settled" })
    expect(archived.context.lockVersion).toBe(3)
  })

  it("a stale lock_version is refused by the machine in active and archived (409 stale_object)", () => {
    const refusal = [["workspace.refuse", { reason: "stale_lock_version" }]]
    const [active] = initialTransition(workspaceMachine, { lockVersion: 4 })
    for (const type of ["workspace.archive", "workspace.restore", "workspace.tombstone"] as const) {
      const [after, actions] = step(active, { type, lockVersion: 3 })
      expect(after.value).toBe("active")
      expect(actions.map((action) => [action.type, action.params])).toEqual(refusal)
    }
    const [edited, editActions] = step(active, { type: "workspace.edit", lockVersion: 5, changes: { name: "x" } })
    expect([edited.value, editActions.map((action) => [action.type, action.params])]).toEqual(["active", refusal])
    const [archived] = step(step(active, { type: "workspace.archive", lockVersion: 4 })[0], {
      type: "workspace.settled"
    })
    expect(archived.context.lockVersion).toBe(6)
    for (const type of ["workspace.archive", "workspace.restore", "workspace.tombstone"] as const) {
      const [after, actions] = step(archived, { type, lockVersion: 4 })
      expect(after.value).toBe("archived")
      expect(actions.map((action) => [action.type, action.params])).toEqual(refusal)
    }
  })

  it("a stale lock_version while archiving or restoring is answered by the state (transition in progress)", () => {
    const [active] = initialTransition(workspaceMachine, { lockVersion: 1 })
    const [archiving] = step(active, { type: "workspace.archive", lockVersion: 1 })
    expect(step(archiving, { type: "workspace.restore", lockVersion: 99 })).toEqual([archiving, []])
  })

  it("an edit with the current lock_version writes its fields; archived workspaces take no edits", () => {
    const [active] = initialTransition(workspaceMachine, { lockVersion: 2 })
    const changes = { name: "Renamed", access_mode: "account_wide" as const }
    const [edited, actions] = step(active, { type: "workspace.edit", lockVersion: 2, changes })
    expect(edited.value).toBe("active")
    expect(edited.context.lockVersion).toBe(3)
    expect(actions.map((action) => [action.type, action.params])).toEqual([
      ["workspace.recordChanges", { lockVersion: 2, changes }]
    ])
    const [archived] = step(step(edited, { type: "workspace.archive", lockVersion: 3 })[0], {
      type: "workspace.settled"
    })
    expect(step(archived, { type: "workspace.edit", lockVersion: 5, changes })).toEqual([archived, []])
  })

  it("a version 1 snapshot migrates to an unknown lock_version: the row fence judges, the next step learns it", () => {
    const v1: PersistedSnapshot = { status: "active", value: "active", context: {} }
    const migrated = migrateSnapshot(machines.workspace, v1, 1) as PersistedSnapshot
    expect(migrated.context).toEqual({ lockVersion: null })
    const restored = workspaceMachine.resolveState({ value: migrated.value, context: { lockVersion: null } })
    const [edited, actions] = step(restored, { type: "workspace.edit", lockVersion: 7, changes: { name: "n" } })
    expect(actions.map((action) => action.type)).toEqual(["workspace.recordChanges"])
    expect(edited.context.lockVersion).toBe(8)
  })
})
