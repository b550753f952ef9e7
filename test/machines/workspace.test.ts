// The workspace machine, one test per row of the spec's table ("Workspace").
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

  it("Workspace: active → archiving, then archived on the archival command", () => {
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

  it("Workspace: archived → restoring, then active on the restoration command", () => {
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
})
