// The workspace binding, the only writer of a workspace row after its insertion: lifecycle steps
// write the state (and archived_at, the step's instant when archival is accepted, null again on
// restoration), edits write their fields (answering the new row), each fenced by the lock_version
// the command presented as a backstop to the machine's guard (a moved version vetoes the step:
// 409 stale_object); the machine's refusal of a stale version vetoes too, and the settling job
// reports straight back (nothing runs inside workspaces yet that archival must stop).
import { machines } from "@troupe/machines/registry"
import { workspaceEffects } from "@troupe/machines/workspace/effects"
import { WorkspacesRepository } from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import { defineActor, type StepInfo, Veto } from "../Binding.ts"

const rowOf = (workspaces: WorkspacesRepository["Service"], step: StepInfo) =>
  Effect.flatMap(workspaces.findWorkspace(step.actorId), (row) =>
    row ? Effect.succeed(row) : Effect.die(new Error(`no workspace row for ${step.actorId}`))
  )

const stale = () => new Veto({ reason: "stale lock_version" })

export const workspaceActor = defineActor({
  kind: "workspace",
  entry: machines.workspace,
  resourceType: "workspace",
  stream: (actorId) => `workspace:${actorId}`,
  rows: {
    [workspaceEffects.recordState]: (params, step) =>
      Effect.gen(function* () {
        const workspaces = yield* WorkspacesRepository.make
        const row = yield* rowOf(workspaces, step)
        const archivedAt = params.archival === "accepted" ? step.now : params.archival === "cleared" ? null : undefined
        const changes = { state: params.state, archived_at: archivedAt }
        const next = yield* workspaces.updateWorkspace(row.id, params.lockVersion, changes, step.now)
        if (!next) return yield* stale()
      }),
    [workspaceEffects.recordChanges]: (params, step) =>
      Effect.gen(function* () {
        const workspaces = yield* WorkspacesRepository.make
        const row = yield* rowOf(workspaces, step)
        const { owner_id, ...changes } = params.changes
        const fields = owner_id === undefined ? changes : { ...changes, owner_id: BigInt(owner_id) }
        const next = yield* workspaces.updateWorkspace(row.id, params.lockVersion, fields, step.now)
        if (!next) return yield* stale()
        return next
      }),
    [workspaceEffects.refuse]: () => Effect.fail(stale())
  },
  jobs: {
    [workspaceEffects.settle]: () => Effect.succeed({ type: "workspace.settled" as const })
  }
})
