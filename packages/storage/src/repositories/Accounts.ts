// Rows of `accounts` and `users`: the installation's one account and its people.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isUuid } from "../Ids.ts"

export type UserKind = "human" | "agent" | "system"
export type UserRole = "owner" | "admin" | "member"
export type UserStatus = "active" | "inactive" | "removed"

export interface AccountRow {
  readonly id: bigint
  readonly public_id: string
  readonly created_at: Date
}

export interface UserRow {
  readonly id: bigint
  readonly public_id: string
  readonly account_id: bigint
  readonly kind: UserKind
  readonly role: UserRole
  readonly status: UserStatus
  readonly email: string | null
  readonly password_digest: string | null
  readonly display_name: string
  readonly handle: string
  readonly agent_identifier: string | null
  readonly steward_id: bigint | null
  readonly shutdown_generation: number
  readonly steward_generation: number | null
  /** An agent's declared configuration (null until declared). */
  readonly configuration: unknown
  readonly created_at: Date
  readonly updated_at: Date
}

export const currentAccount = Effect.gen(function* () {
  const sql = yield* SqlClient
  const rows = yield* sql<AccountRow>`SELECT id, public_id, created_at FROM accounts LIMIT 1`
  return rows[0]
})

export const insertAccount = Effect.fnUntraced(function* (row: { publicId: string; now: Date }) {
  const sql = yield* SqlClient
  const rows = yield* sql<AccountRow>`
    INSERT INTO accounts (public_id, created_at) VALUES (${row.publicId}, ${row.now})
    RETURNING id, public_id, created_at`
  return rows[0]!
})

/** Serializes account-level writes (first boot, handle allocation) inside the current transaction. */
export const lockAccountWrites = Effect.flatMap(
  SqlClient,
  (sql) => sql`SELECT pg_advisory_xact_lock(hashtext('troupe.account'))`
)

export const findOwner = Effect.fnUntraced(function* (accountId: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<UserRow>`SELECT * FROM users WHERE account_id = ${accountId} AND role = 'owner'`
  return rows[0]
})

export const findUserById = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<UserRow>`SELECT * FROM users WHERE id = ${id}`
  return rows[0]
})

export const findHumanByEmail = Effect.fnUntraced(function* (email: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<UserRow>`SELECT * FROM users WHERE kind = 'human' AND lower(email) = lower(${email})`
  return rows[0]
})

/** Handles in the account equal to `base` or shaped `base-N`. */
export const handlesLike = Effect.fnUntraced(function* (accountId: bigint, base: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ handle: string }>`
    SELECT handle FROM users
    WHERE account_id = ${accountId} AND (handle = ${base} OR handle LIKE ${`${base.slice(0, 29)}%`})`
  return new Set(rows.map((row) => row.handle))
})

export interface NewUser {
  readonly publicId: string
  readonly accountId: bigint
  readonly kind: UserKind
  readonly role: UserRole
  readonly email: string | null
  readonly passwordDigest: string | null
  readonly displayName: string
  readonly handle: string
  readonly now: Date
}

export const insertUser = Effect.fnUntraced(function* (user: NewUser) {
  const sql = yield* SqlClient
  const rows = yield* sql<UserRow>`
    INSERT INTO users (public_id, account_id, kind, role, email, password_digest, display_name, handle,
                       created_at, updated_at)
    VALUES (${user.publicId}, ${user.accountId}, ${user.kind}, ${user.role}, ${user.email},
            ${user.passwordDigest}, ${user.displayName}, ${user.handle}, ${user.now}, ${user.now})
    RETURNING *`
  return rows[0]!
})

export const listHumans = Effect.fnUntraced(function* (accountId: bigint) {
  const sql = yield* SqlClient
  return yield* sql<UserRow>`
    SELECT * FROM users WHERE account_id = ${accountId} AND kind = 'human' ORDER BY id`
})

export const setUserStatus = Effect.fnUntraced(function* (id: bigint, status: UserStatus, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE users SET status = ${status}, updated_at = ${now} WHERE id = ${id}`
})

export const findUserByPublicId = Effect.fnUntraced(function* (publicId: string) {
  if (!isUuid(publicId)) return undefined
  const sql = yield* SqlClient
  const rows = yield* sql<UserRow>`SELECT * FROM users WHERE public_id = ${publicId}`
  return rows[0]
})
