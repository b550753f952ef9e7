// Accounts and people: the one account per installation, its owner (first boot), humans with a
// role, and the system user. The instance is uninitialized until the owner exists.

import { newPublicId } from "@troupe/storage/Ids"
import { withRepositories } from "@troupe/storage/Repositories"
import * as Repo from "@troupe/storage/repositories/Accounts"
import { HandleReservationsRepository } from "@troupe/storage/repositories/HandleReservations"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { AlreadyInitialized, EmailTaken, HandleTaken, InvalidInput, NotInitialized } from "../kernel/Errors.ts"
import { now } from "../kernel/Now.ts"
import { isPrintable, isPrintableText } from "../kernel/Text.ts"
import { allocateHandle as allocateFreeHandle } from "./HandleChanges.ts"
import { handleBase, isHandle } from "./Handles.ts"
import { hashPassword } from "./Passwords.ts"

/** A person or agent of the account, as stored. */
export type User = Repo.UserRow

export interface NewHuman {
  readonly email: string
  readonly password: string
  readonly displayName: string
  readonly handle?: string | undefined
}

const emailPattern = /^[^\s@]+@[^\s@]+$/

/** Validates and normalizes a new human's fields. */
export const validateHuman = (input: NewHuman): Effect.Effect<NewHuman, InvalidInput> => {
  const email = input.email.trim()
  // Judged before trimming: trim() would drop a U+FEFF the rule refuses.
  const displayName = isPrintable(input.displayName) ? input.displayName.trim() : ""
  const handle = input.handle?.trim() || undefined
  if (email.length > 254 || !emailPattern.test(email) || !isPrintable(email)) {
    return Effect.fail(new InvalidInput({ field: "email", message: "Enter a valid email address" }))
  }
  if (input.password.length < 8 || input.password.length > 1024 || input.password.includes("\u0000")) {
    return Effect.fail(new InvalidInput({ field: "password", message: "Use a password of 8 to 1024 characters" }))
  }
  if (!isPrintableText(displayName, 1, 100)) {
    return Effect.fail(new InvalidInput({ field: "display_name", message: "Enter a name of 1 to 100 characters" }))
  }
  if (handle !== undefined && !isHandle(handle)) {
    return Effect.fail(
      new InvalidInput({
        field: "handle",
        message: "A handle is 2 to 32 lowercase letters, digits, '-' or '_', starting with a letter or digit"
      })
    )
  }
  return Effect.succeed({ email, password: input.password, displayName, handle })
}

export class Accounts extends Context.Service<
  Accounts,
  {
    readonly isInitialized: Effect.Effect<boolean>
    /** First boot: creates the account, its system user and the owner. */
    readonly createOwner: (
      input: NewHuman
    ) => Effect.Effect<Repo.UserRow, AlreadyInitialized | InvalidInput | EmailTaken | HandleTaken>
    readonly createHuman: (
      input: NewHuman & { readonly role: "admin" | "member" }
    ) => Effect.Effect<Repo.UserRow, NotInitialized | InvalidInput | EmailTaken | HandleTaken>
    readonly findUser: (id: bigint) => Effect.Effect<Repo.UserRow | undefined>
  }
>()("@troupe/domain/accounts/Accounts") {
  static readonly layer = Layer.effect(
    Accounts,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const accounts = yield* Repo.AccountsRepository
      const reservations = yield* HandleReservationsRepository
      const db = yield* withRepositories(Repo.AccountsRepository, HandleReservationsRepository)

      const allocateHandle = Effect.fnUntraced(function* (accountId: bigint, input: NewHuman, at: Date) {
        if (input.handle !== undefined) {
          const taken = yield* accounts.handlesLike(accountId, input.handle)
          const reserved = yield* reservations.reservedLike(accountId, input.handle, at)
          if (taken.has(input.handle) || reserved.has(input.handle))
            return yield* new HandleTaken({ handle: input.handle })
          return input.handle
        }
        return yield* allocateFreeHandle(accountId, handleBase(input.displayName), at)
      })

      const insertHuman = Effect.fnUntraced(function* (
        accountId: bigint,
        input: NewHuman,
        role: Repo.UserRole,
        at: Date
      ) {
        if (yield* accounts.findHumanByEmail(input.email)) return yield* new EmailTaken()
        const handle = yield* allocateHandle(accountId, input, at)
        const passwordDigest = yield* hashPassword(input.password)
        return yield* accounts.insertUser({
          publicId: newPublicId(),
          accountId,
          kind: "human",
          role,
          email: input.email,
          passwordDigest,
          displayName: input.displayName,
          handle,
          now: at
        })
      })

      const isInitialized = Effect.gen(function* () {
        const account = yield* accounts.currentAccount
        return account !== undefined && (yield* accounts.findOwner(account.id)) !== undefined
      }).pipe(Effect.orDie)

      const createOwner = (raw: NewHuman) =>
        Effect.gen(function* () {
          const input = yield* validateHuman(raw)
          const at = yield* now
          yield* accounts.lockAccountWrites
          const existing = yield* accounts.currentAccount
          const account = existing ?? (yield* accounts.insertAccount({ publicId: newPublicId(), now: at }))
          if (existing && (yield* accounts.findOwner(existing.id))) return yield* new AlreadyInitialized()
          if (!existing) {
            yield* accounts.insertUser({
              publicId: newPublicId(),
              accountId: account.id,
              kind: "system",
              role: "member",
              email: null,
              passwordDigest: null,
              displayName: "System",
              handle: "system",
              now: at
            })
          }
          return yield* insertHuman(account.id, input, "owner", at)
        }).pipe(sql.withTransaction, db)

      const createHuman = (raw: NewHuman & { readonly role: "admin" | "member" }) =>
        Effect.gen(function* () {
          const input = yield* validateHuman(raw)
          const at = yield* now
          yield* accounts.lockAccountWrites
          const account = yield* accounts.currentAccount
          if (!account || !(yield* accounts.findOwner(account.id))) return yield* new NotInitialized()
          return yield* insertHuman(account.id, input, raw.role, at)
        }).pipe(sql.withTransaction, db)

      const findUser = (id: bigint) => Effect.orDie(accounts.findUserById(id))

      return Accounts.of({ isInitialized, createOwner, createHuman, findUser })
    })
  )
}
