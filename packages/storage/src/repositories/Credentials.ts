// Rows of `credential_lineages` and `credentials`: access and refresh tokens (lookup and salted
// digest only), grouped in lineages that rotate independently.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type Plane = "platform" | "member" | "executor_transport"
export type Holder = "human" | "agent" | "runner"

export interface LineageRow {
  readonly id: bigint
  readonly public_id: string
  readonly holder: Holder
  readonly client_id: string
  readonly user_id: bigint | null
  readonly executor_id: bigint | null
  readonly created_at: Date
  readonly revoked_at: Date | null
}

export interface CredentialRow {
  readonly id: bigint
  readonly public_id: string
  readonly kind: "access" | "refresh"
  readonly plane: Plane | null
  readonly lineage_id: bigint | null
  readonly user_id: bigint | null
  readonly executor_id: bigint | null
  readonly epoch: number | null
  readonly name: string | null
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly issued_at: Date
  readonly expires_at: Date | null
  readonly revoked_at: Date | null
  readonly superseded_at: Date | null
}

export const insertLineage = Effect.fnUntraced(function* (lineage: {
  readonly publicId: string
  readonly holder: Holder
  readonly clientId: string
  readonly userId: bigint | null
  readonly executorId: bigint | null
  readonly now: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<LineageRow>`
    INSERT INTO credential_lineages (public_id, holder, client_id, user_id, executor_id, created_at)
    VALUES (${lineage.publicId}, ${lineage.holder}, ${lineage.clientId}, ${lineage.userId}, ${lineage.executorId},
            ${lineage.now})
    RETURNING *`
  return rows[0]!
})

export interface NewCredential {
  readonly publicId: string
  readonly kind: "access" | "refresh"
  readonly plane: Plane | null
  readonly lineageId: bigint | null
  readonly userId: bigint | null
  readonly executorId: bigint | null
  readonly epoch: number | null
  readonly name: string | null
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
  readonly issuedAt: Date
  readonly expiresAt: Date | null
}

export const insertCredential = Effect.fnUntraced(function* (credential: NewCredential) {
  const sql = yield* SqlClient
  const rows = yield* sql<CredentialRow>`
    INSERT INTO credentials (public_id, kind, plane, lineage_id, user_id, executor_id, epoch, name, lookup, salt,
                             digest, issued_at, expires_at)
    VALUES (${credential.publicId}, ${credential.kind}, ${credential.plane}, ${credential.lineageId},
            ${credential.userId}, ${credential.executorId}, ${credential.epoch}, ${credential.name},
            ${credential.lookup}, ${credential.salt}, ${credential.digest}, ${credential.issuedAt},
            ${credential.expiresAt})
    RETURNING *`
  return rows[0]!
})

export const findCredentialByLookup = Effect.fnUntraced(function* (lookup: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<CredentialRow>`SELECT * FROM credentials WHERE lookup = ${lookup}`
  return rows[0]
})

export const findLineage = Effect.fnUntraced(function* (id: bigint) {
  const sql = yield* SqlClient
  const rows = yield* sql<LineageRow>`SELECT * FROM credential_lineages WHERE id = ${id}`
  return rows[0]
})

/** Marks every live credential of the lineage superseded (a rotation is about to mint new ones). */
export const supersedeLineageCredentials = Effect.fnUntraced(function* (lineageId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE credentials SET superseded_at = ${now}
    WHERE lineage_id = ${lineageId} AND superseded_at IS NULL AND revoked_at IS NULL`
})

/** Ends a lineage: it and every credential in it stop working. */
export const revokeLineage = Effect.fnUntraced(function* (lineageId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE credential_lineages SET revoked_at = ${now} WHERE id = ${lineageId} AND revoked_at IS NULL`
  yield* sql`UPDATE credentials SET revoked_at = ${now} WHERE lineage_id = ${lineageId} AND revoked_at IS NULL`
})

/** Ends every live lineage of a holder (a reconnect supersedes the previous device's). */
export const revokeHolderLineages = Effect.fnUntraced(function* (
  holder: Holder,
  owner: { readonly userId?: bigint; readonly executorId?: bigint },
  now: Date
) {
  const sql = yield* SqlClient
  const lineages = yield* sql<{ id: bigint }>`
    SELECT id FROM credential_lineages
    WHERE holder = ${holder} AND revoked_at IS NULL
      AND ${owner.userId === undefined ? sql`true` : sql`user_id = ${owner.userId}`}
      AND ${owner.executorId === undefined ? sql`true` : sql`executor_id = ${owner.executorId}`}`
  for (const lineage of lineages) yield* revokeLineage(lineage.id, now)
})

/** A human's personal access tokens (access credentials outside any lineage), newest first. */
export const listPersonalTokens = Effect.fnUntraced(function* (userId: bigint) {
  const sql = yield* SqlClient
  return yield* sql<CredentialRow>`
    SELECT * FROM credentials
    WHERE user_id = ${userId} AND kind = 'access' AND lineage_id IS NULL
    ORDER BY issued_at DESC, id DESC`
})

/** One of a human's personal access tokens, by its public id (a UUID). */
export const findPersonalToken = Effect.fnUntraced(function* (userId: bigint, publicId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<CredentialRow>`
    SELECT * FROM credentials
    WHERE public_id = ${publicId} AND user_id = ${userId} AND kind = 'access' AND lineage_id IS NULL`
  return rows[0]
})

export const revokeCredential = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE credentials SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`
})

/** Supersedes one credential if it is still current; answers false when another rotation won. */
export const supersedeCredential = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE credentials SET superseded_at = ${now}
    WHERE id = ${id} AND superseded_at IS NULL AND revoked_at IS NULL RETURNING id`
  return rows.length > 0
})
