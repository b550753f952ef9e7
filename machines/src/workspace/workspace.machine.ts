// A workspace's lifecycle (spec "States and transitions", rows "Workspace"; "Workspace": states
// live (active, restoring), archived (archiving, archived), tombstone):
//   active --archival command, lock_version matches--> archiving, then archived
//   archived --restoration command, lock_version matches--> restoring, then active
//   active|archived --DELETE--> tombstoned
//   active --edit, lock_version matches--> active (the fields written to the row)
// archiving and restoring last until the settling job reports back: the place where later work
// (stopping a workspace's conversations, for one) is carried out durably. Archival stamps the
// instant it was accepted (archived_at); restoration clears it. Every step bumps the row's
// lock_version, which the context follows; a command presenting another one is refused in the
// settled states (409 stale_object), and answered by the state in transitional ones.
import { assign, setup } from "xstate"
import type { WorkspaceContext, WorkspaceInput } from "./context.ts"
import {
  type RecordStateParams,
  type RefuseParams,
  type SettleParams,
  type WorkspaceState,
  workspaceEffects
} from "./effects.ts"
import type { WorkspaceChanges, WorkspaceEvent } from "./events.ts"

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

/** A stale lock_version is refused before anything else the command would do. */
const refuseStale = {
  guard: "stale" as const,
  actions: { type: workspaceEffects.refuse, params: { reason: "stale_lock_version" } as RefuseParams }
}

export const workspaceMachine = setup({
  types: { context: {} as WorkspaceContext, input: {} as WorkspaceInput, events: {} as WorkspaceEvent },
  actions: {
    [workspaceEffects.recordState]: (_, _params: RecordStateParams) => {},
    [workspaceEffects.recordChanges]: (_, _params: { lockVersion: number; changes: WorkspaceChanges }) => {},
    [workspaceEffects.refuse]: (_, _params: RefuseParams) => {},
    [workspaceEffects.settle]: (_, _params: SettleParams) => {},
    /** The row's lock_version after this step's write (each write bumps it by one). */
    bumped: assign(({ context, event }) => ({
      lockVersion:
        "lockVersion" in event ? event.lockVersion + 1 : context.lockVersion === null ? null : context.lockVersion + 1
    }))
  },
  guards: {
    stale: ({ context, event }) =>
      context.lockVersion !== null && "lockVersion" in event && event.lockVersion !== context.lockVersion
  }
}).createMachine({
  id: "workspace",
  context: ({ input }) => ({ lockVersion: input.lockVersion ?? null }),
  initial: "active",
  states: {
    active: {
      meta: { waitsOn: "its members" },
      on: {
        "workspace.archive": [
          refuseStale,
          {
            target: "archiving",
            actions: [
              record("archiving", "accepted"),
              "bumped",
              { type: workspaceEffects.settle, params: { toward: "archived" } }
            ]
          }
        ],
        "workspace.restore": [refuseStale],
        "workspace.edit": [
          refuseStale,
          {
            actions: [
              {
                type: workspaceEffects.recordChanges,
                params: ({ event }) => ({ lockVersion: event.lockVersion, changes: event.changes })
              },
              "bumped"
            ]
          }
        ],
        "workspace.tombstone": [refuseStale, { target: "tombstoned", actions: [record("tombstoned"), "bumped"] }]
      }
    },
    archiving: { on: { "workspace.settled": { target: "archived", actions: [record("archived"), "bumped"] } } },
    archived: {
      meta: { waitsOn: "its owner (restoration or deletion)" },
      on: {
        "workspace.archive": [refuseStale],
        "workspace.restore": [
          refuseStale,
          {
            target: "restoring",
            actions: [
              record("restoring", "cleared"),
              "bumped",
              { type: workspaceEffects.settle, params: { toward: "active" } }
            ]
          }
        ],
        "workspace.tombstone": [refuseStale, { target: "tombstoned", actions: [record("tombstoned"), "bumped"] }]
      }
    },
    restoring: { on: { "workspace.settled": { target: "active", actions: [record("active"), "bumped"] } } },
    tombstoned: { type: "final" }
  }
})

export const workspaceVersion = 2

/** Version 1 kept no lock_version: the row fence judges until the next step learns it. */
export const workspaceMigrations = {
  2: <S extends { readonly context: unknown }>(snapshot: S) => ({ ...snapshot, context: { lockVersion: null } })
}
