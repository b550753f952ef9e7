// Handlers of executors discovery: the runners and tool providers a member may use, with their
// assignment scope, served tools and documents, environment, and presence.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { Executors } from "@troupe/domain/executors/Executors"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ExecutorsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "executors",
  Effect.fn(function* (handlers) {
    const executors = yield* Executors
    const visible = (kind: "runner" | "tool_provider" | undefined, publicId: string | undefined) =>
      Effect.flatMap(CurrentMemberCaller, (caller) => executors.discover(caller, { kind, publicId }))

    return handlers
      .handle("list", ({ query }) => Effect.map(visible(query.kind, undefined), (executors) => ({ executors })))
      .handle("show", ({ params }) =>
        Effect.gen(function* () {
          const [executor] = yield* visible(undefined, params.public_id)
          if (!executor) return yield* errors.notFound()
          return { executor }
        })
      )
  })
)
