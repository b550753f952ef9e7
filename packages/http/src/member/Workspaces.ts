// Handlers of Member: workspaces. Bodies arrive decoded by the contract's schemas; answers are the
// domain's workspace, encoded by the endpoint's success schema.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { type Workspace, type WorkspaceState, Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { pageOf, parsePage, publicIdKey } from "../conventions/Pagination.ts"

const stateGroups: Record<string, ReadonlyArray<WorkspaceState>> = {
  live: ["active", "restoring"],
  archived: ["archiving", "archived"]
}

const one = (workspace: Workspace) => ({ workspace })
const messagingOf = (workspace: Workspace) => ({
  messaging: { agents: workspace.messaging, lock_version: workspace.lock_version }
})

export const WorkspacesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "workspaces",
  Effect.fn(function* (handlers) {
    const workspaces = yield* Workspaces
    /** Runs `run` for the request's caller. */
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)

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
          return { workspaces: result.items, pagination: result.pagination }
        }).pipe(answerRefusals)
      )
      .handle("read", ({ params }) =>
        command((caller) => workspaces.read(caller, params.workspace_id)).pipe(Effect.map(one), answerRefusals)
      )
      .handle("create", ({ payload }) =>
        command((caller) => workspaces.create(caller, payload)).pipe(Effect.map(one), answerRefusals)
      )
      .handle("patch", ({ params, payload }) =>
        command((caller) => workspaces.patch(caller, params.workspace_id, payload)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("accessMode", ({ params, payload }) =>
        command((caller) =>
          workspaces.setAccessMode(caller, params.workspace_id, payload.access_mode, payload.lock_version)
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("ownershipTransfer", ({ params, payload }) =>
        command((caller) =>
          workspaces.transferOwnership(caller, params.workspace_id, payload.target_user_public_id, payload.lock_version)
        ).pipe(Effect.map(one), answerRefusals)
      )
      .handle("archival", ({ params, payload }) =>
        command((caller) => workspaces.lifecycle(caller, params.workspace_id, "archive", payload.lock_version)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("restoration", ({ params, payload }) =>
        command((caller) => workspaces.lifecycle(caller, params.workspace_id, "restore", payload.lock_version)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("delete", ({ params, query }) =>
        command((caller) => workspaces.lifecycle(caller, params.workspace_id, "tombstone", query.lock_version)).pipe(
          Effect.map(one),
          answerRefusals
        )
      )
      .handle("messaging", ({ params }) =>
        command((caller) => workspaces.read(caller, params.workspace_id)).pipe(Effect.map(messagingOf), answerRefusals)
      )
      .handle("replaceMessaging", ({ params, payload }) =>
        command((caller) =>
          workspaces.replaceMessaging(caller, params.workspace_id, payload.agents, payload.lock_version)
        ).pipe(Effect.map(messagingOf), answerRefusals)
      )
      .handle("overrides", ({ params, payload }) =>
        command((caller) =>
          workspaces.replaceOverrides(caller, params.workspace_id, payload.overrides, payload.lock_version)
        ).pipe(
          Effect.map((workspace) => ({
            tool_provider_overrides: {
              overrides: workspace.tool_provider_overrides,
              lock_version: workspace.lock_version
            }
          })),
          answerRefusals
        )
      )
      .handle("principals", ({ params }) =>
        command((caller) => workspaces.principals(caller, params.workspace_id)).pipe(
          Effect.map((principals) => ({ principals })),
          answerRefusals
        )
      )
  })
)
