// Handlers of executors discovery: the runners and tool providers a member may use, with their
// assignment scope, served tools and documents, environment, and presence.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { now } from "@troupe/domain/Now"
import { presenceFields } from "@troupe/domain/Presence"
import { isUuid } from "@troupe/storage/Ids"
import * as Accounts from "@troupe/storage/repositories/Accounts"
import * as Executors from "@troupe/storage/repositories/Executors"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SqlClient } from "effect/sql/SqlClient"
import { executorJson } from "../executor/Executor.ts"

const discovered = (row: Executors.ExecutorRow & { readonly agent_public_id: string | null }, at: Date) => ({
  ...executorJson(row),
  kind: row.kind as "runner" | "tool_provider",
  assignment_scope: row.assignment_scope,
  assignment_agent_public_id: row.assignment_scope === "agent_private" ? row.agent_public_id : null,
  ...presenceFields(row, at)
})

export const ExecutorsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executors",
  Effect.fn(function* (handlers) {
    const sql = yield* SqlClient
    const db = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
      effect.pipe(Effect.orDie, Effect.provideService(SqlClient, sql))

    /** Whose machines the caller may see: an agent sees as its steward does, for itself. */
    const visible = (kind: "runner" | "tool_provider" | undefined, publicId: string | undefined) =>
      Effect.gen(function* () {
        const { user } = yield* CurrentMemberCaller
        const row = (yield* db(Accounts.findUserById(user.id)))!
        const managerId = row.kind === "agent" ? row.steward_id! : row.id
        const agentIds = row.kind === "agent" ? [row.id] : yield* db(Executors.stewardedAgentIds(row.id))
        return yield* db(Executors.listDiscoverable({ accountId: row.account_id, managerId, agentIds, kind, publicId }))
      })

    return handlers
      .handle("list", ({ query }) =>
        Effect.gen(function* () {
          if (query.kind !== undefined && query.kind !== "runner" && query.kind !== "tool_provider") {
            return yield* errors.parameterInvalid("kind must be runner or tool_provider")
          }
          const at = yield* now
          return { executors: (yield* visible(query.kind, undefined)).map((row) => discovered(row, at)) }
        })
      )
      .handle("show", ({ params }) =>
        Effect.gen(function* () {
          if (!isUuid(params.public_id)) return yield* errors.notFound()
          const [row] = yield* visible(undefined, params.public_id)
          if (!row) return yield* errors.notFound()
          return { executor: discovered(row, yield* now) }
        })
      )
  })
)
