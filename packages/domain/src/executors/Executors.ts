// Executor addresses as their own plane and members see them: an address's description (with
// the presence its discovery row shows), its announcement (a whole replacement: one step of its
// address actor, whose binding writes it), its presence marks from the cable (display-only
// columns, no step), and discovery of the runners and tool providers a member may use (an agent
// sees as its steward does, for itself). Not here: connecting, repairing or revoking an address.
import { ActorHost } from "@troupe/actors/ActorHost"
import { executorAddressActor } from "@troupe/actors/bindings/executorAddress"
import { executorAddressEffects } from "@troupe/machines/executorAddress/effects"
import type { Announcement } from "@troupe/machines/executorAddress/events"
import { withDatabase } from "@troupe/storage/Defects"
import { isUuid } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/Executors"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { Unauthenticated } from "../kernel/Errors.ts"
import { now } from "../kernel/Now.ts"
import { presenceFields } from "./Presence.ts"

/** What commands read of the caller's address row. */
export type CallerRow = Pick<
  Repo.ExecutorRow,
  | "id"
  | "public_id"
  | "account_id"
  | "kind"
  | "status"
  | "display_name"
  | "credential_epoch"
  | "manager_id"
  | "agent_id"
  | "assignment_scope"
  | "announcement"
  | "last_seen_at"
  | "connected_at"
>

/**
 * The executor a transport credential speaks for, at the epoch its credential carries, with its
 * row as authentication read it: no command reads the caller's address again.
 */
export interface ExecutorCaller {
  readonly publicId: string
  readonly credentialEpoch: number
  readonly row: CallerRow
}

/** What an address shows: its own view and discovery rows alike. */
export interface ExecutorView {
  readonly public_id: string
  readonly kind: Repo.ExecutorKind
  readonly status: "active" | "revoked"
  readonly display_name: string
  readonly credential_epoch: number
  readonly served_tools: Repo.Announcement["tools"]
  readonly environment: Repo.Announcement["environment"]
  readonly served_documents: Repo.Announcement["documents"]
  readonly presence: "online" | "offline" | "not_yet_seen"
  readonly last_seen_at: Date | null
  readonly connected_at: Date | null
}

/** A discovered runner or tool provider, with its assignment (the agent an agent_private one serves). */
export interface DiscoveredExecutor extends ExecutorView {
  readonly kind: "runner" | "tool_provider"
  readonly assignment_scope: Repo.AssignmentScope
  readonly assignment_agent_public_id: string | null
}

/** The executor's own view, measured at an instant. */
export interface ExecutorDescription {
  readonly executor: ExecutorView
  readonly measured_at: Date
}

export type PresenceMark = Repo.PresenceMark

const viewOf = (row: CallerRow, at: Date): ExecutorView => ({
  public_id: row.public_id,
  kind: row.kind,
  status: row.status,
  display_name: row.display_name,
  credential_epoch: row.credential_epoch,
  served_tools: row.announcement.tools,
  environment: row.announcement.environment,
  served_documents: row.announcement.documents,
  ...presenceFields(row, at)
})

/**
 * The executor's own view. Its epoch is at least its credential's: a connection mints at the
 * epoch it tells the address, and the address's step mirrors it on the row just after.
 */
const describe = (caller: ExecutorCaller, row: CallerRow, at: Date): ExecutorDescription => {
  const view = viewOf(row, at)
  return {
    executor: { ...view, credential_epoch: Math.max(view.credential_epoch, caller.credentialEpoch) },
    measured_at: at
  }
}

export class Executors extends Context.Service<
  Executors,
  {
    /** The address a transport credential authenticated as (so it exists). */
    readonly describe: (caller: ExecutorCaller) => Effect.Effect<ExecutorDescription>
    /** Replaces what the address serves; a revoked address is no caller any more. */
    readonly announce: (
      caller: ExecutorCaller,
      announcement: Announcement
    ) => Effect.Effect<ExecutorDescription, Unauthenticated>
    /** Writes a presence mark; answers the instant it wrote (a connection's own stamp). */
    readonly markPresence: (executorId: bigint, mark: PresenceMark) => Effect.Effect<Date>
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
      const executors = yield* Repo.ExecutorsRepository
      const addresses = (yield* ActorHost).ref(executorAddressActor)
      return Executors.of({
        describe: (caller) => Effect.map(now, (at) => describe(caller, caller.row, at)),
        announce: (caller, announcement) =>
          Effect.gen(function* () {
            const outcome = yield* addresses
              .send(caller.publicId, { type: "executor.announce", announcement })
              .pipe(Effect.orDie)
            const row =
              outcome._tag === "Accepted" ? outcome.replies[executorAddressEffects.recordAnnouncement] : undefined
            if (!row) return yield* new Unauthenticated()
            return describe(caller, row, yield* now)
          }),
        markPresence: (executorId, mark) =>
          db(Effect.flatMap(now, (at) => Effect.as(executors.markPresence(executorId, mark, at), at))),
        discover: (caller, filter) =>
          db(
            Effect.gen(function* () {
              if (filter.publicId !== undefined && !isUuid(filter.publicId)) return []
              const agentIds =
                caller.user.kind === "agent" ? [caller.user.id] : yield* executors.stewardedAgentIds(caller.human.id)
              const rows = yield* executors.listDiscoverable({
                accountId: caller.user.accountId,
                managerId: caller.human.id,
                agentIds,
                kind: filter.kind,
                publicId: filter.publicId
              })
              const at = yield* now
              return rows.map(
                (row): DiscoveredExecutor => ({
                  ...viewOf(row, at),
                  kind: row.kind,
                  assignment_scope: row.assignment_scope,
                  assignment_agent_public_id: row.assignment_scope === "agent_private" ? row.agent_public_id : null
                })
              )
            })
          )
      })
    })
  )
}
