// The workspace binding: lifecycle steps write the state (and archived_at, the step's instant when
// archival is accepted, null again on restoration) to the row, fenced by the lock_version the
// command presented (a moved version vetoes the step: 409 stale_object); the settling job reports
// straight back (nothing runs inside workspaces yet that archival must stop).
import { type Binding, Veto } from "@troupe/actors/Binding"
import { machines } from "@troupe/machines/registry"
import { type RecordStateParams, workspaceEffects } from "@troupe/machines/workspace/workspace.machine"
import * as Workspaces from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"

export const workspaceBinding: Binding = {
  kind: "workspace",
  entry: machines.workspace,
  resourceType: "workspace",
  stream: (actorId) => `workspace:${actorId}`,
  rows: {
    [workspaceEffects.recordState]: (params: RecordStateParams, step) =>
      Effect.gen(function* () {
        const row = yield* Workspaces.findWorkspace(step.actorId)
        if (!row) return yield* Effect.die(new Error(`no workspace row for ${step.actorId}`))
        const archivedAt = params.archival === "accepted" ? step.now : params.archival === "cleared" ? null : undefined
        const changes = { state: params.state as Workspaces.WorkspaceState, archived_at: archivedAt }
        const next = yield* Workspaces.updateWorkspace(row.id, params.lockVersion, changes, step.now)
        if (!next) return yield* Effect.fail(new Veto({ reason: "stale lock_version" }))
      })
  },
  jobs: {
    [workspaceEffects.settle]: () => Effect.succeed({ type: "workspace.settled" })
  }
}
