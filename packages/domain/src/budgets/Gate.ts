// The budget gate (supplement "Budgets"): the actor must be a live human owner or admin (else
// administrator_required); the target unknown or the system user is absent; a removed human or
// agent, or an agent the actor does not steward, is user_not_administrable.
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { Effect } from "effect"
import { Absent, NotPermitted } from "../kernel/Refusals.ts"

/** The acting user when it is a live human owner or admin. */
export const administrator = (actorId: bigint) =>
  Effect.gen(function* () {
    const accounts = yield* AccountsRepository.make
    const actor = yield* accounts.findUserById(actorId)
    if (
      actor === undefined ||
      actor.kind !== "human" ||
      actor.status !== "active" ||
      (actor.role !== "owner" && actor.role !== "admin")
    ) {
      return yield* new NotPermitted({
        code: "administrator_required",
        message: "Only a signed-in owner or admin administers budgets"
      })
    }
    return actor
  })

/** The user `administrator` may administer budgets of. */
export const administrable = (administrator: UserRow, targetPublicId: string) =>
  Effect.gen(function* () {
    const accounts = yield* AccountsRepository.make
    const target = yield* accounts.findUserByPublicId(targetPublicId)
    if (target === undefined || target.kind === "system" || target.account_id !== administrator.account_id) {
      return yield* new Absent({ code: "not_found", message: "No such user" })
    }
    if (target.status === "removed" || (target.kind === "agent" && target.steward_id !== administrator.id)) {
      return yield* new NotPermitted({
        code: "user_not_administrable",
        message:
          target.status === "removed"
            ? "This user was removed"
            : "Only the agent's current steward administers its budgets"
      })
    }
    return target
  })
