// Handlers of Member: schedules: each door hands the decoded members to the domain's Schedules,
// which judges them and answers the projection; refusals answer their codes at the contract's
// statuses.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { Schedules, type Verb } from "@troupe/domain/schedules/Schedules"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const SchedulesHandlers = HttpApiBuilder.group(
  TroupeApi,
  "schedules",
  Effect.fn(function* (handlers) {
    const schedules = yield* Schedules
    const verb =
      (name: Verb) =>
      ({ params }: { readonly params: { workspace_id: string; conversation_id: string; job_id: string } }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.verb(caller, params.workspace_id, params.conversation_id, params.job_id, name)
        ).pipe(
          Effect.map((schedule) => ({ schedule })),
          answerRefusals
        )

    return handlers
      .handle("listWorkspace", ({ params, query }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) => schedules.list(caller, params.workspace_id, null, query)).pipe(
          Effect.map((page) => ({ schedules: page.schedules, pagination: { next_after: page.nextAfter } })),
          answerRefusals
        )
      )
      .handle("list", ({ params, query }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.list(caller, params.workspace_id, params.conversation_id, query)
        ).pipe(
          Effect.map((page) => ({ schedules: page.schedules, pagination: { next_after: page.nextAfter } })),
          answerRefusals
        )
      )
      .handle("create", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.create(caller, params.workspace_id, params.conversation_id, payload)
        ).pipe(
          Effect.map((schedule) => ({ schedule })),
          answerRefusals
        )
      )
      .handle("show", ({ params }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.read(caller, params.workspace_id, params.conversation_id, params.job_id)
        ).pipe(
          Effect.map((schedule) => ({ schedule })),
          answerRefusals
        )
      )
      .handle("update", ({ params, payload }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.update(caller, params.workspace_id, params.conversation_id, params.job_id, payload)
        ).pipe(
          Effect.map((schedule) => ({ schedule })),
          answerRefusals
        )
      )
      .handle("pause", verb("pause"))
      .handle("resume", verb("resume"))
      .handle("cancel", verb("cancel"))
      .handle("run", verb("run"))
      .handle("executions", ({ params, query }) =>
        Effect.flatMap(CurrentMemberCaller, (caller) =>
          schedules.executions(caller, params.workspace_id, params.conversation_id, params.job_id, query)
        ).pipe(
          Effect.map((page) => ({
            executions: page.executions,
            pagination: { next_after: page.nextAfter, last_cursor: page.lastCursor }
          })),
          answerRefusals
        )
      )
  })
)
