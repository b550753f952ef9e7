// The workspace binding: lifecycle steps write the state (and archived_at, the step's instant when
// archival is accepted, null again on restoration) to the row, fenced by the lock_version the
// command presented (a moved version vetoes the step: 409 stale_object); the settling job reports
// straight back (nothing runs inside workspaces yet that archival must stop).
import { machines } from "@troupe/machines/registry"
import { workspaceEffects } from "@troupe/machines/workspace/effects"
import * as Workspaces from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import { defineActor, Veto } from "../Binding.ts"

export const workspaceActor = defineActor({
  kind: "workspace",
  entry: machines.workspace,
  resourceType: "workspace",
  stream: (actorId) => `workspace:${actorId}`,
  rows: {
    [workspaceEffects.recordState]: (params, step) =>
      Effect.gen(function* () {
        const row = yield* Workspaces.findWorkspace(step.actorId)
        if (!row) return yield* Effect.die(new Error(`no workspace row for ${step.actorId}`))
        const archivedAt = params.archival === "accepted" ? step.now : params.archival === "cleared" ? null : undefined
        const changes = { state: params.state, archived_at: archivedAt }
        const next = yield* Workspaces.updateWorkspace(row.id, params.lockVersion, changes, step.now)
        if (!next) return yield* new Veto({ reason: "stale lock_version" })
      })
  },
  jobs: {
    [workspaceEffects.settle]: () => Effect.succeed({ type: "workspace.settled" as const })
  }
})
