// The naming rule of runs (supplement "Uploads"): whoever can read a run binding an upload (a
// task's attachments, a committed result's link) may read the upload's bytes, thumbnail and
// preview, by the Runs service's own read rule. The namings themselves are written with the task
// rows (storage RunUploadNamings); this answers the Uploads layer's NamingRules.
import { withRepositories } from "@troupe/storage/Repositories"
import { AccountsRepository } from "@troupe/storage/repositories/Accounts"
import { runNamingKind } from "@troupe/storage/repositories/RunUploadNamings"
import { Effect } from "effect"
import { callerOfUser } from "../accounts/Caller.ts"
import type { NamingRule } from "../uploads/UploadAccess.ts"
import { Runs } from "./Runs.ts"

export const runNamingRules = Effect.gen(function* () {
  const runs = yield* Runs
  const accounts = yield* AccountsRepository
  const db = yield* withRepositories(AccountsRepository)
  const rule: NamingRule = (reader, holderIds) =>
    Effect.gen(function* () {
      const user = yield* db(accounts.findUserById(reader.userId))
      if (user === undefined || user.kind === "system") return false
      return yield* runs.readsAny(callerOfUser({ ...user, kind: user.kind }, user.account_id), holderIds)
    })
  return { [runNamingKind]: rule }
})
