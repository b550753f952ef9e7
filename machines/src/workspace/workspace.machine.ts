// A workspace's lifecycle (spec "States and transitions", rows "Workspace"; "Workspace": states
// live (active, restoring), archived (archiving, archived), tombstone):
//   active --archival command, lock_version matches--> archiving, then archived
//   archived --restoration command, lock_version matches--> restoring, then active
//   active|archived --DELETE--> tombstoned
// archiving and restoring last until the settling job reports back: the place where later work
// (stopping a workspace's conversations, for one) is carried out durably. Archival stamps the
// instant it was accepted (archived_at); restoration clears it.
import { setup } from "xstate"
import type { WorkspaceContext, WorkspaceInput } from "./context.ts"
import { type RecordStateParams, type SettleParams, type WorkspaceState, workspaceEffects } from "./effects.ts"
import type { WorkspaceEvent } from "./events.ts"

/** The states between a lifecycle command and its settling: they accept no further command. */
export const workspaceTransitions: ReadonlyArray<string> = ["archiving", "restoring"]

const record = (state: WorkspaceState, archival?: RecordStateParams["archival"]) => ({
  type: workspaceEffects.recordState,
  params: ({ event }: { event: WorkspaceEvent }): RecordStateParams => ({
    state,
    lockVersion: "lockVersion" in event ? event.lockVersion : undefined,
    ...(archival === undefined ? {} : { archival })
  })
})

export const workspaceMachine = setup({
  types: { context: {} as WorkspaceContext, input: {} as WorkspaceInput, events: {} as WorkspaceEvent },
  actions: {
    [workspaceEffects.recordState]: (_, _params: RecordStateParams) => {},
    [workspaceEffects.settle]: (_, _params: SettleParams) => {}
  }
}).createMachine({
  id: "workspace",
  context: {},
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its members" },
      on: {
        "workspace.archive": {
          target: "archiving",
          actions: [record("archiving", "accepted"), { type: workspaceEffects.settle, params: { toward: "archived" } }]
        },
        "workspace.tombstone": { target: "tombstoned", actions: record("tombstoned") }
      }
    },
    archiving: { on: { "workspace.settled": { target: "archived", actions: record("archived") } } },
    archived: {
      meta: { waitsOn: "its owner (restoration or deletion)" },
      on: {
        "workspace.restore": {
          target: "restoring",
          actions: [record("restoring", "cleared"), { type: workspaceEffects.settle, params: { toward: "active" } }]
        },
        "workspace.tombstone": { target: "tombstoned", actions: record("tombstoned") }
      }
    },
    restoring: { on: { "workspace.settled": { target: "active", actions: record("active") } } },
    tombstoned: { type: "final" }
  }
})

export const workspaceVersion = 1
