// Handlers of Member: workspaces.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { type Workspace, type WorkspaceState, Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { parseLockVersion } from "../conventions/LockVersion.ts"
import { pageOf, parsePage, publicIdKey } from "../conventions/Pagination.ts"
import { unwrap } from "./Body.ts"

/** One representation for list rows and single answers (SUPPLEMENT's row members are a subset). */
export const workspaceJson = (row: Workspace) => ({
  public_id: row.public_id,
  name: row.name,
  access_mode: row.access_mode,
  metadata: row.metadata,
  lock_version: row.lock_version,
  state: row.state,
  archived_at: row.archived_at?.toISOString() ?? null,
  owner_public_id: row.owner_public_id,
  owner: row.owner,
  creator: row.creator,
  tool_provider_overrides: row.tool_provider_overrides,
  created_at: row.created_at.toISOString(),
  updated_at: row.updated_at.toISOString()
})

const stateGroups: Record<string, ReadonlyArray<WorkspaceState>> = {
  live: ["active", "restoring"],
  archived: ["archiving", "archived"]
}

const messagingJson = (row: Workspace) => ({ messaging: { agents: row.messaging, lock_version: row.lock_version } })

export const WorkspacesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "workspaces",
  Effect.fn(function* (handlers) {
    const workspaces = yield* Workspaces
    const one = (row: Workspace) => ({ workspace: workspaceJson(row) })
    const lockVersionOf = (members: Record<string, unknown>) => parseLockVersion(members.lock_version)

    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function* () {
          const states = stateGroups[query.state ?? "live"]
          if (!states) return yield* errors.parameterInvalid("state must be live or archived")
          const dedicated = query.dedicated_to_current_agent
          if (dedicated !== undefined && dedicated !== "true" && dedicated !== "false") {
            return yield* errors.parameterInvalid("dedicated_to_current_agent must be true or false")
          }
          const page = yield* parsePage(query, publicIdKey)
          const after = page.after?.[0]
          const rows = yield* workspaces.list(yield* CurrentMemberCaller, {
            states,
            dedicatedToCurrentAgent: dedicated === "true",
            after,
            order: page.order,
            limit: page.limit + 1
          })
          const result = pageOf(rows, page, (row) => [row.public_id])
          return { workspaces: result.items.map(workspaceJson), pagination: result.pagination }
        }).pipe(answerRefusals)
      )
      .handle("read", ({ params }) =>
        Effect.flatMap(CurrentMemberCaller, (who) => workspaces.read(who, params.workspace_id)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "workspace")
          if (members.name === undefined) return yield* errors.parameterMissing("workspace.name is required")
          const row = yield* workspaces.create(yield* CurrentMemberCaller, {
            name: members.name,
            accessMode: members.access_mode,
            metadata: members.metadata
          })
          return one(row)
        }).pipe(answerRefusals)
      )
      .handle("patch", ({ params, payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "workspace")
          const lockVersion = yield* lockVersionOf(members)
          const row = yield* workspaces.patch(yield* CurrentMemberCaller, params.workspace_id, {
            name: members.name,
            metadata: members.metadata,
            lockVersion
          })
          return one(row)
        }).pipe(answerRefusals)
      )
      .handle("accessMode", ({ params, payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "access_mode")
          const lockVersion = yield* lockVersionOf(members)
          if (members.access_mode === undefined)
            return yield* errors.parameterMissing("access_mode.access_mode is required")
          return one(
            yield* workspaces.setAccessMode(
              yield* CurrentMemberCaller,
              params.workspace_id,
              members.access_mode,
              lockVersion
            )
          )
        }).pipe(answerRefusals)
      )
      .handle("ownershipTransfer", ({ params, payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "ownership_transfer")
          const lockVersion = yield* lockVersionOf(members)
          if (members.target_user_public_id === undefined) {
            return yield* errors.parameterMissing("ownership_transfer.target_user_public_id is required")
          }
          return one(
            yield* workspaces.transferOwnership(
              yield* CurrentMemberCaller,
              params.workspace_id,
              members.target_user_public_id,
              lockVersion
            )
          )
        }).pipe(answerRefusals)
      )
      .handle("archival", ({ params, payload }) =>
        Effect.gen(function* () {
          const lockVersion = yield* lockVersionOf(unwrap(payload, "command"))
          return one(
            yield* workspaces.lifecycle(yield* CurrentMemberCaller, params.workspace_id, "archive", lockVersion)
          )
        }).pipe(answerRefusals)
      )
      .handle("restoration", ({ params, payload }) =>
        Effect.gen(function* () {
          const lockVersion = yield* lockVersionOf(unwrap(payload, "command"))
          return one(
            yield* workspaces.lifecycle(yield* CurrentMemberCaller, params.workspace_id, "restore", lockVersion)
          )
        }).pipe(answerRefusals)
      )
      .handle("delete", ({ params, query }) =>
        Effect.gen(function* () {
          const lockVersion = yield* parseLockVersion(query.lock_version, "query")
          return one(
            yield* workspaces.lifecycle(yield* CurrentMemberCaller, params.workspace_id, "tombstone", lockVersion)
          )
        }).pipe(answerRefusals)
      )
      .handle("messaging", ({ params }) =>
        Effect.flatMap(CurrentMemberCaller, (who) => workspaces.read(who, params.workspace_id)).pipe(
          Effect.map(messagingJson),
          answerRefusals
        )
      )
      .handle("replaceMessaging", ({ params, payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "messaging")
          const lockVersion = yield* lockVersionOf(members)
          if (members.agents === undefined) return yield* errors.parameterMissing("messaging.agents is required")
          return messagingJson(
            yield* workspaces.replaceMessaging(
              yield* CurrentMemberCaller,
              params.workspace_id,
              members.agents,
              lockVersion
            )
          )
        }).pipe(answerRefusals)
      )
      .handle("overrides", ({ params, payload }) =>
        Effect.gen(function* () {
          const members = unwrap(payload, "tool_provider_overrides")
          if (members.overrides === undefined)
            return yield* errors.parameterMissing("tool_provider_overrides.overrides is required")
          const lockVersion = yield* lockVersionOf(members)
          const row = yield* workspaces.replaceOverrides(
            yield* CurrentMemberCaller,
            params.workspace_id,
            members.overrides,
            lockVersion
          )
          return { tool_provider_overrides: { overrides: row.tool_provider_overrides, lock_version: row.lock_version } }
        }).pipe(answerRefusals)
      )
      .handle("principals", ({ params }) =>
        Effect.flatMap(CurrentMemberCaller, (who) => workspaces.principals(who, params.workspace_id)).pipe(
          Effect.map((rows) => ({ principals: rows })),
          answerRefusals
        )
      )
  })
)
