// Handler of PATCH /agent_api/v1/principals/{public_id}: a handle rename by a human member
// credential (itself, or an agent it stewards). Rules in the HandleChanges domain service.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { HandleChanges } from "@troupe/domain/HandleChanges"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const PrincipalsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "principals",
  Effect.fn(function* (handlers) {
    const changes = yield* HandleChanges
    return handlers.handle("rename", ({ params, payload }) =>
      Effect.gen(function* () {
        const { user } = yield* CurrentMemberCaller
        const principal = yield* changes.rename(user.id, params.public_id, payload).pipe(
          Effect.catchTags({
            RenameBadParameter: (e) => Effect.fail(errors.badRequest(e.code, e.message)),
            InvalidInput: (e) => Effect.fail(errors.unprocessable("validation_failed", e.message)),
            RenameNotAuthorized: (e) => Effect.fail(errors.forbidden("not_authorized", e.message)),
            PrincipalNotFound: () => Effect.fail(errors.notFound()),
            HandleUnavailable: (e) => Effect.fail(errors.conflict("name_taken", e.message))
          })
        )
        return { principal }
      })
    )
  })
)
