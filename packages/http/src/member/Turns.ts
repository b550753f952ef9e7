// Handlers of Member: turns. The timeline window and reads, and the content verbs, each one event
// to the conversation's actor (the tail, the running reply and frozen prefixes are its machine's).
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CallerIdentity } from "@troupe/contracts/Idempotency"
import { CurrentMemberCaller, type MemberCaller } from "@troupe/contracts/member/Caller"
import { Turns } from "@troupe/domain/conversations/Turns"
import { flagParameter } from "@troupe/domain/kernel/Flags"
import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const TurnsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "turns",
  Effect.fn(function* (handlers) {
    const turns = yield* Turns
    const command = <A, E>(run: (caller: MemberCaller) => Effect.Effect<A, E>) =>
      Effect.flatMap(CurrentMemberCaller, run)

    return handlers
      .handle("list", ({ params, query }) =>
        command((caller) => turns.list(caller, params.workspace_id, params.conversation_id, query)).pipe(answerRefusals)
      )
      .handle("show", ({ params, query }) =>
        Effect.gen(function* () {
          const includeHidden = yield* flagParameter(query.include_hidden, "include_hidden")
          const turn = yield* turns.show(
            yield* CurrentMemberCaller,
            params.workspace_id,
            params.conversation_id,
            params.turn_id,
            includeHidden
          )
          return { turn }
        }).pipe(answerRefusals)
      )
      .handle("edit", ({ params, payload }) =>
        command((caller) =>
          turns.edit(caller, params.workspace_id, params.conversation_id, params.turn_id, payload.text)
        ).pipe(
          Effect.map((turn) => ({ turn })),
          answerRefusals
        )
      )
      .handle("regeneration", ({ params, payload }) =>
        command((caller) =>
          turns.regenerate(caller, params.workspace_id, params.conversation_id, params.turn_id, payload)
        ).pipe(answerRefusals)
      )
      .handle("regenerationReceipt", ({ params, query, request }) =>
        Effect.gen(function* () {
          if (query.idempotency_key.trim() === "") return yield* errors.of("parameter_missing", "idempotency_key")
          const identity = yield* CallerIdentity
          // The route the acceptance was kept under: the regeneration's path as this one names it.
          const route = `POST ${request.url.split("?")[0]!.replace(/_receipt$/, "")}`
          const body = yield* turns.receipt(
            yield* CurrentMemberCaller,
            params.workspace_id,
            params.conversation_id,
            params.turn_id,
            { caller: identity.key, route, key: query.idempotency_key }
          )
          // That 202 body, byte for byte, answered 200.
          return HttpServerResponse.text(body, { status: 200, contentType: "application/json" })
        }).pipe(answerRefusals)
      )
      .handle("cancellation", ({ params }) =>
        command((caller) => turns.cancel(caller, params.workspace_id, params.conversation_id)).pipe(answerRefusals)
      )
      .handle("update", ({ params, payload }) =>
        command((caller) =>
          turns.setVisibility(caller, params.workspace_id, params.conversation_id, params.turn_id, payload.visibility)
        ).pipe(
          Effect.map((turn) => ({ turn })),
          answerRefusals
        )
      )
      .handle("remove", ({ params }) =>
        command((caller) => turns.remove(caller, params.workspace_id, params.conversation_id, params.turn_id)).pipe(
          answerRefusals
        )
      )
      .handle("variants", ({ params }) =>
        command((caller) => turns.variants(caller, params.workspace_id, params.conversation_id, params.turn_id)).pipe(
          answerRefusals
        )
      )
      .handle("activate", ({ params }) =>
        command((caller) =>
          turns.activate(caller, params.workspace_id, params.conversation_id, params.turn_id, params.variant_id)
        ).pipe(
          Effect.map((turn) => ({ turn })),
          answerRefusals
        )
      )
      .handle("updateVariant", ({ params, payload }) =>
        command((caller) =>
          turns.conceal(
            caller,
            params.workspace_id,
            params.conversation_id,
            params.turn_id,
            params.variant_id,
            payload.concealed
          )
        ).pipe(
          Effect.map((variant) => ({ variant })),
          answerRefusals
        )
      )
  })
)
