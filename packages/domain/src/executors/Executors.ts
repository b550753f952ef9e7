// Executor addresses as their own plane and members see them: an address's description, its
// announcement (a whole replacement, judged by Announcements), its presence marks from the
// cable, and discovery of the runners and tool providers a member may use (an agent sees as its
// steward does, for itself). Not here: connecting, repairing or revoking an address.
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Executors"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { now } from "../kernel/Now.ts"
import { type AnnouncementRefusal, validateAnnouncement } from "./Announcements.ts"

export type Executor = Repo.ExecutorRow

/** A discovered runner or tool provider, with the agent an agent_private one serves. */
export type DiscoveredExecutor = Executor & { readonly agent_public_id: string | null }

export type PresenceMark = "connected" | "seen" | "disconnected"

export class Executors extends Context.Service<
  Executors,
  {
    /** The address an executor credential authenticated as (so it exists). */
    readonly find: (executorId: bigint) => Effect.Effect<Executor>
    readonly announce: (executorId: bigint, body: unknown) => Effect.Effect<Executor, AnnouncementRefusal>
    readonly markPresence: (executorId: bigint, mark: PresenceMark) => Effect.Effect<void>
    /** The active runners and tool providers the caller may use; a public id that is no UUID finds none. */
    readonly discover: (
      caller: Caller,
      filter: { readonly kind?: "runner" | "tool_provider" | undefined; readonly publicId?: string | undefined }
    ) => Effect.Effect<ReadonlyArray<DiscoveredExecutor>>
  }
>()("@troupe/domain/executors/Executors") {
  static readonly layer = Layer.effect(
    Executors,
    Effect.gen(function* () {
      const db = withDatabase(yield* SqlClient)
      return Executors.of({
        find: (executorId) => db(Effect.map(Repo.findExecutorById(executorId), (row) => row!)),
        announce: (executorId, body) =>
          Effect.flatMap(validateAnnouncement(body), (announcement) =>
            db(Effect.flatMap(now, (at) => Repo.replaceAnnouncement(executorId, announcement, at)))
          ),
        markPresence: (executorId, mark) => db(Effect.flatMap(now, (at) => Repo.markPresence(executorId, mark, at))),
        discover: (caller, filter) =>
          db(
            Effect.gen(function* () {
              if (filter.publicId !== undefined && !isUuid(filter.publicId)) return []
              const agentIds =
                caller.user.kind === "agent" ? [caller.user.id] : yield* Repo.stewardedAgentIds(caller.human.id)
              return yield* Repo.listDiscoverable({
                accountId: caller.user.accountId,
                managerId: caller.human.id,
                agentIds,
                kind: filter.kind,
                publicId: filter.publicId
              })
            })
          )
      })
    })
  )
}
