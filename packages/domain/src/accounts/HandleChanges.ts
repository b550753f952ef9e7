// Handle renames (spec "Member profile", rename rule): a steward renames an agent it stewards
// (paired or named), a human renames itself. The name a rename leaves is reserved for 14 days
// against every other member (the releaser may retake it at once; only its latest released name
// is reserved), and each rename narrates handle_changed {user_public_id, old, new} on the
// account's stream, and on the feed of every conversation in which the renamed principal has
// spoken or answers (each conversation's actor told, durably), in the rename's transaction. The
// new handle arrives of the grammar (the contract judged it). Also: system handle allocation
// that skips reserved names.

import { ActorHost } from "@troupe/actors/ActorHost"
import type { ConversationEvent } from "@troupe/machines/conversation/events"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import { AccountsRepository, type UserRow } from "@troupe/storage/repositories/Accounts"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { HandleReservationsRepository } from "@troupe/storage/repositories/HandleReservations"
import * as Outbox from "@troupe/storage/repositories/Outbox"
import type { PrincipalRow } from "@troupe/storage/repositories/Workspaces"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"
import { Absent, NotPermitted, StateConflict } from "../kernel/Refusals.ts"
import type { Caller } from "./Caller.ts"
import { handleCandidate } from "./Handles.ts"

export const reservationDays = 14
const reservationMillis = reservationDays * 24 * 60 * 60 * 1000

/** The account's stream of narrated account-level items (handle_changed, ...). */
export const accountStream = (accountPublicId: string) => `account:${accountPublicId}`

/** `base` when free (not held, not reserved for another), else base-2, base-3, ... */
export const allocateHandle = Effect.fnUntraced(function* (accountId: bigint, base: string, at: Date) {
  const held = yield* (yield* AccountsRepository).handlesLike(accountId, base)
  const reserved = yield* (yield* HandleReservationsRepository).reservedLike(accountId, base, at)
  let n = 1
  while (held.has(handleCandidate(base, n)) || reserved.has(handleCandidate(base, n))) n++
  return handleCandidate(base, n)
})

const notAuthorized = (message: string) => new NotPermitted({ code: "not_authorized", message })
const unavailable = (message: string) => new StateConflict({ code: "name_taken", message })

export type RenameFailure = NotPermitted | Absent | StateConflict

export class HandleChanges extends Context.Service<
  HandleChanges,
  {
    /** The caller renames the principal `targetPublicId` to `handle`. */
    readonly rename: (
      caller: Caller,
      targetPublicId: string,
      handle: string
    ) => Effect.Effect<PrincipalRow, RenameFailure>
  }
>()("@troupe/domain/accounts/HandleChanges") {
  static readonly layer = Layer.effect(
    HandleChanges,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* AccountsRepository
      const reservations = yield* HandleReservationsRepository
      const conversations = yield* ConversationsRepository
      const transactional = (yield* ActorHost).transactional

      /** The feeds of the conversations the principal speaks in or answers carry the rename too. */
      const narrateInConversations = (userId: bigint, item: { user_public_id: string; old: string; new: string }) =>
        Effect.gen(function* () {
          const renamed: ConversationEvent = { type: "principal.renamed", item }
          for (const conversation of yield* conversations.spokenIn(userId)) {
            yield* transactional.reply({ kind: "conversation", actorId: conversation.public_id }, renamed)
          }
        })

      const principal = Effect.fnUntraced(function* (user: UserRow) {
        const steward = user.steward_id === null ? undefined : yield* accounts.findUserById(user.steward_id)
        return {
          public_id: user.public_id,
          handle: user.handle,
          kind: user.kind as "human" | "agent",
          display_name: user.display_name,
          agent_identifier: user.agent_identifier,
          steward_public_id: steward?.public_id ?? null
        } satisfies PrincipalRow
      })

      const rename = (caller: Caller, targetPublicId: string, handle: string) =>
        Effect.gen(function* () {
          const { user } = caller
          if (user.kind !== "human") {
            return yield* notAuthorized("Only a human renames handles: its own and its agents'")
          }
          const target = isUuid(targetPublicId) ? yield* accounts.findUserByPublicId(targetPublicId) : undefined
          if (!target || target.account_id !== user.accountId || target.kind === "system") {
            return yield* new Absent({ code: "not_found", message: "Not found" })
          }
          if (target.id !== user.id && !(target.kind === "agent" && target.steward_id === user.id)) {
            return yield* notAuthorized("Only the steward renames an agent; a human renames itself")
          }
          return yield* Effect.gen(function* () {
            yield* accounts.lockAccountWrites
            const current = (yield* accounts.findUserById(target.id))!
            if (current.handle === handle) return yield* principal(current)
            const at = yield* now
            if ((yield* accounts.handlesLike(current.account_id, handle)).has(handle)) {
              return yield* unavailable(`The handle ${handle} is taken`)
            }
            if ((yield* reservations.reservedLike(current.account_id, handle, at, current.id)).has(handle)) {
              return yield* unavailable(`The handle ${handle} was released recently and is reserved`)
            }
            yield* reservations.setHandle(current.id, handle, at)
            yield* reservations.reserve({
              userId: current.id,
              accountId: current.account_id,
              handle: current.handle,
              releasedAt: at,
              expiresAt: new Date(at.getTime() + reservationMillis)
            })
            const account = (yield* accounts.currentAccount)!
            const item = { user_public_id: current.public_id, old: current.handle, new: handle }
            yield* Outbox.append(accountStream(account.public_id), [
              {
                publicId: newPublicId(),
                type: "handle_changed",
                resourceType: "user",
                resourcePublicId: current.public_id,
                payload: item,
                occurredAt: at
              }
            ])
            yield* narrateInConversations(current.id, item)
            return yield* principal({ ...current, handle })
          }).pipe(sql.withTransaction)
        }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.provideService(SqlClient, sql))

      return HandleChanges.of({ rename })
    })
  )
}
