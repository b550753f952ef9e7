// The workspace binding: lifecycle steps write the state to the row, fenced by the lock_version
// the command presented (a moved version vetoes the step: 409 stale_object); the settling job
// reports straight back (nothing runs inside workspaces yet that archival must stop).
import { type Binding, Veto } from "@troupe/actors/Binding"
import { machines } from "@troupe/machines/registry"
import { workspaceEffects } from "@troupe/machines/workspace/workspace.machine"
import * as Workspaces from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"

export const workspaceBinding: Binding = {
  kind: "workspace",
  entry: machines.workspace,
  resourceType: "workspace",
  stream: (actorId) => `workspace:${actorId}`,
  rows: {
    [workspaceEffects.recordState]: (
      params: { state: Workspaces.WorkspaceState; lockVersion: number | undefined },
      step
    ) =>
      Effect.gen(function* () {
        const row = yield* Workspaces.findWorkspace(step.actorId)
        if (!row) return yield* Effect.die(new Error(`no workspace row for ${step.actorId}`))
        const next = yield* Workspaces.updateWorkspace(row.id, params.lockVersion, { state: params.state }, step.now)
        if (!next) return yield* Effect.fail(new Veto({ reason: "stale lock_version" }))
      })
  },
  jobs: {
    [workspaceEffects.settle]: () => Effect.succeed({ type: "workspace.settled" })
  }
}
