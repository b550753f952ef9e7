// Handler of PATCH /agent_api/v1/principals/{public_id}: a handle rename by a human member
// credential (itself, or an agent it stewards). Rules in the HandleChanges domain service.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { HandleChanges } from "@troupe/domain/accounts/HandleChanges"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

export const PrincipalsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "principals",
  Effect.fn(function* (handlers) {
    const changes = yield* HandleChanges
    return handlers.handle("rename", ({ params, payload }) =>
      Effect.gen(function* () {
        const caller = yield* CurrentMemberCaller
        const principal = yield* answerRefusals(changes.rename(caller, params.public_id, payload.handle))
        return { principal }
      })
    )
  })
)
