// Handlers of the run inputs door: a standalone run's message queue (domain/runs/RunInputs.ts).
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { RunInputs } from "@troupe/domain/runs/RunInputs"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRunRefusals } from "./Runs.ts"

export const RunInputsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "runInputs",
  Effect.fn(function* (handlers) {
    const inputs = yield* RunInputs
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)
    return handlers
      .handle("list", ({ params }) =>
        command((caller) => inputs.list(caller, params.workspace_id, params.run_id)).pipe(answerRunRefusals)
      )
      .handle("create", ({ params, payload, request }) =>
        command((caller) =>
          inputs.create(caller, params.workspace_id, params.run_id, payload, request.headers["idempotency-key"])
        ).pipe(
          Effect.map((input) => ({ input })),
          answerRunRefusals
        )
      )
      .handle("update", ({ params, payload }) =>
        command((caller) => inputs.update(caller, params.workspace_id, params.run_id, params.input_id, payload)).pipe(
          Effect.map((input) => ({ input })),
          answerRunRefusals
        )
      )
      .handle("remove", ({ params }) =>
        command((caller) => inputs.remove(caller, params.workspace_id, params.run_id, params.input_id)).pipe(
          answerRunRefusals
        )
      )
      .handle("reorder", ({ params, payload }) =>
        command((caller) => inputs.reorder(caller, params.workspace_id, params.run_id, payload.inputs)).pipe(
          answerRunRefusals
        )
      )
  })
)
