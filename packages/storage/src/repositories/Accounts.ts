// Rows of `accounts` and `users`: the installation's one account and its people, as the
// AccountsRepository service.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"
import * as Rows from "./Rows.ts"

export const UserKind = Schema.Literals(["human", "agent", "system"])
export type UserKind = typeof UserKind.Type
export const UserRole = Schema.Literals(["owner", "admin", "member"])
export type UserRole = typeof UserRole.Type
export const UserStatus = Schema.Literals(["active", "inactive", "removed"])
export type UserStatus = typeof UserStatus.Type

export const AccountRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  created_at: Schema.Date
})
export type AccountRow = typeof AccountRow.Type

export const UserRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  account_id: Schema.BigInt,
  kind: UserKind,
  role: UserRole,
  status: UserStatus,
  email: Schema.NullOr(Schema.String),
  password_digest: Schema.NullOr(Schema.String),
  display_name: Schema.String,
  handle: Schema.String,
  agent_identifier: Schema.NullOr(Schema.String),
  steward_id: Schema.NullOr(Schema.BigInt),
  shutdown_generation: Schema.Number,
  steward_generation: Schema.NullOr(Schema.Number),
  /** An agent's declared configuration (null until declared). */
  configuration: Schema.Unknown,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type UserRow = typeof UserRow.Type

const currentAccount = Rows.maybe("Accounts.currentAccount", {
  Request: Schema.Void,
  Result: AccountRow,
  execute: (_, sql) => sql`SELECT id, public_id, created_at FROM accounts LIMIT 1`
})(undefined)

const insertAccount = Rows.one("Accounts.insertAccount", {
  Request: Schema.Struct({ publicId: Schema.String, now: Schema.Date }),
  Result: AccountRow,
  execute: (row, sql) => sql`
    INSERT INTO accounts (public_id, created_at) VALUES (${row.publicId}, ${row.now})
    RETURNING id, public_id, created_at`
})

/** Serializes account-level writes (first boot, handle allocation) inside the current transaction. */
const lockAccountWrites = Effect.flatMap(
  SqlClient,
  (sql) => sql`SELECT pg_advisory_xact_lock(hashtext('troupe.account'))`
)

const ById = Schema.Struct({ id: Schema.BigInt })

const ownerOf = Rows.maybe("Accounts.findOwner", {
  Request: ById,
  Result: UserRow,
  execute: ({ id }, sql) => sql`SELECT * FROM users WHERE account_id = ${id} AND role = 'owner'`
})

const findOwner = (accountId: bigint) => ownerOf({ id: accountId })

const userById = Rows.maybe("Accounts.findUserById", {
  Request: ById,
  Result: UserRow,
  execute: ({ id }, sql) => sql`SELECT * FROM users WHERE id = ${id}`
})

const findUserById = (id: bigint) => userById({ id })

const humanByEmail = Rows.maybe("Accounts.findHumanByEmail", {
  Request: Schema.Struct({ email: Schema.String }),
  Result: UserRow,
  execute: ({ email }, sql) => sql`SELECT * FROM users WHERE kind = 'human' AND lower(email) = lower(${email})`
})

const findHumanByEmail = (email: string) => humanByEmail({ email })

const handles = Rows.all("Accounts.handlesLike", {
  Request: Schema.Struct({ accountId: Schema.BigInt, base: Schema.String }),
  Result: Schema.Struct({ handle: Schema.String }),
  execute: ({ accountId, base }, sql) => sql`
    SELECT handle FROM users
    WHERE account_id = ${accountId} AND (handle = ${base} OR handle LIKE ${`${base.slice(0, 29)}%`})`
})

/** Handles in the account equal to `base` or shaped `base-N`. */
const handlesLike = (accountId: bigint, base: string) =>
  Effect.map(handles({ accountId, base }), (rows) => new Set(rows.map((row) => row.handle)))

export const NewUser = Schema.Struct({
  publicId: Schema.String,
  accountId: Schema.BigInt,
  kind: UserKind,
  role: UserRole,
  email: Schema.NullOr(Schema.String),
  passwordDigest: Schema.NullOr(Schema.String),
  displayName: Schema.String,
  handle: Schema.String,
  now: Schema.Date
})
export type NewUser = typeof NewUser.Type

const insertUser = Rows.one("Accounts.insertUser", {
  Request: NewUser,
  Result: UserRow,
  execute: (user, sql) => sql`
    INSERT INTO users (public_id, account_id, kind, role, email, password_digest, display_name, handle,
                       created_at, updated_at)
    VALUES (${user.publicId}, ${user.accountId}, ${user.kind}, ${user.role}, ${user.email},
            ${user.passwordDigest}, ${user.displayName}, ${user.handle}, ${user.now}, ${user.now})
    RETURNING *`
})

const humans = Rows.all("Accounts.listHumans", {
  Request: ById,
  Result: UserRow,
  execute: ({ id }, sql) => sql`
    SELECT * FROM users WHERE account_id = ${id} AND kind = 'human' ORDER BY id`
})

const listHumans = (accountId: bigint) => humans({ id: accountId })

const setUserStatus = Effect.fnUntraced(function* (id: bigint, status: UserStatus, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id}`
})

const userByPublicId = Rows.maybe("Accounts.findUserByPublicId", {
  Request: Schema.Struct({ publicId: Schema.String }),
  Result: UserRow,
  execute: ({ publicId }, sql) => sql`SELECT * FROM users WHERE public_id = ${publicId}`
})

const findUserByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  return yield* userByPublicId({ publicId })
})

export class AccountsRepository extends Context.Service<AccountsRepository>()("@troupe/storage/AccountsRepository", {
  make: Effect.map(SqlClient, (sql) =>
    Rows.bind(sql, {
      currentAccount,
      insertAccount,
      lockAccountWrites,
      findOwner,
      findUserById,
      findHumanByEmail,
      handlesLike,
      insertUser,
      listHumans,
      setUserStatus,
      findUserByPublicId
    })
  )
}) {
  static readonly layer = Layer.effect(AccountsRepository, AccountsRepository.make)
}
