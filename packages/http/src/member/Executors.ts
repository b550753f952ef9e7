// Handlers of executors discovery: the runners and tool providers a member may use, with their
// assignment scope, served tools and documents, environment, and presence.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { type DiscoveredExecutor, Executors } from "@troupe/domain/executors/Executors"
import { presenceFields } from "@troupe/domain/executors/Presence"
import { now } from "@troupe/domain/kernel/Now"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { executorJson } from "../executor/Executor.ts"

const discovered = (row: DiscoveredExecutor, at: Date) => ({
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
    const executors = yield* Executors
    const visible = (kind: "runner" | "tool_provider" | undefined, publicId: string | undefined) =>
      Effect.flatMap(CurrentMemberCaller, (caller) => executors.discover(caller, { kind, publicId }))

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
          const [row] = yield* visible(undefined, params.public_id)
          if (!row) return yield* errors.notFound()
          return { executor: discovered(row, yield* now) }
        })
      )
  })
)
