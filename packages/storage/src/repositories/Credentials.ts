// Rows of `credential_lineages` and `credentials`: access and refresh tokens (lookup and salted
// digest only), grouped in lineages that rotate independently. An access credential is read
// for authentication in one statement with every row its judgement needs.
import { Context, Effect, Layer, Schema, SchemaTransformation } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { UserRow } from "./Accounts.ts"
import { ExecutorRow } from "./Executors.ts"
import * as Rows from "./Rows.ts"

export const Plane = Schema.Literals(["platform", "member", "executor_transport"])
export type Plane = typeof Plane.Type
export const Holder = Schema.Literals(["human", "agent", "runner"])
export type Holder = typeof Holder.Type
const CredentialKind = Schema.Literals(["access", "refresh"])

export const LineageRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  holder: Holder,
  client_id: Schema.String,
  user_id: Schema.NullOr(Schema.BigInt),
  executor_id: Schema.NullOr(Schema.BigInt),
  created_at: Schema.Date,
  revoked_at: Schema.NullOr(Schema.Date)
})
export type LineageRow = typeof LineageRow.Type

export const CredentialRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  kind: CredentialKind,
  plane: Schema.NullOr(Plane),
  lineage_id: Schema.NullOr(Schema.BigInt),
  user_id: Schema.NullOr(Schema.BigInt),
  executor_id: Schema.NullOr(Schema.BigInt),
  epoch: Schema.NullOr(Schema.Number),
  name: Schema.NullOr(Schema.String),
  lookup: Schema.String,
  salt: Schema.Uint8Array,
  digest: Schema.Uint8Array,
  issued_at: Schema.Date,
  expires_at: Schema.NullOr(Schema.Date),
  revoked_at: Schema.NullOr(Schema.Date),
  superseded_at: Schema.NullOr(Schema.Date)
})
export type CredentialRow = typeof CredentialRow.Type

const insertLineage = Rows.one("Credentials.insertLineage", {
  Request: Schema.Struct({
    publicId: Schema.String,
    holder: Holder,
    clientId: Schema.String,
    userId: Schema.NullOr(Schema.BigInt),
    executorId: Schema.NullOr(Schema.BigInt),
    now: Schema.Date
  }),
  Result: LineageRow,
  execute: (lineage, sql) => sql`
    INSERT INTO credential_lineages (public_id, holder, client_id, user_id, executor_id, created_at)
    VALUES (${lineage.publicId}, ${lineage.holder}, ${lineage.clientId}, ${lineage.userId}, ${lineage.executorId},
            ${lineage.now})
    RETURNING *`
})

export const NewCredential = Schema.Struct({
  publicId: Schema.String,
  kind: CredentialKind,
  plane: Schema.NullOr(Plane),
  lineageId: Schema.NullOr(Schema.BigInt),
  userId: Schema.NullOr(Schema.BigInt),
  executorId: Schema.NullOr(Schema.BigInt),
  epoch: Schema.NullOr(Schema.Number),
  name: Schema.NullOr(Schema.String),
  lookup: Schema.String,
  salt: Schema.Uint8Array,
  digest: Schema.Uint8Array,
  issuedAt: Schema.Date,
  expiresAt: Schema.NullOr(Schema.Date)
})
export type NewCredential = typeof NewCredential.Type

const insertCredential = Rows.one("Credentials.insertCredential", {
  Request: NewCredential,
  Result: CredentialRow,
  execute: (credential, sql) => sql`
    INSERT INTO credentials (public_id, kind, plane, lineage_id, user_id, executor_id, epoch, name, lookup, salt,
                             digest, issued_at, expires_at)
    VALUES (${credential.publicId}, ${credential.kind}, ${credential.plane}, ${credential.lineageId},
            ${credential.userId}, ${credential.executorId}, ${credential.epoch}, ${credential.name},
            ${credential.lookup}, ${credential.salt}, ${credential.digest}, ${credential.issuedAt},
            ${credential.expiresAt})
    RETURNING *`
})

const byLookup = Rows.maybe("Credentials.findCredentialByLookup", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: CredentialRow,
  execute: ({ lookup }, sql) => sql`SELECT * FROM credentials WHERE lookup = ${lookup}`
})

const findCredentialByLookup = (lookup: string) => byLookup({ lookup })

/** An agent as its authority is judged: active, and under its steward's shutdown generation. */
export const AgentStanding = Schema.Struct({
  id: UserRow.fields.id,
  status: UserRow.fields.status,
  steward_generation: UserRow.fields.steward_generation
})
export type AgentStanding = typeof AgentStanding.Type

/** A steward as an agent's authority is judged: an active human of the agent's generation. */
export const StewardStanding = Schema.Struct({
  id: UserRow.fields.id,
  kind: UserRow.fields.kind,
  status: UserRow.fields.status,
  shutdown_generation: UserRow.fields.shutdown_generation
})
export type StewardStanding = typeof StewardStanding.Type

/**
 * An access credential with what authenticating it judges, each null where its row is absent:
 * its lineage, its executor and the executor's agent with that agent's steward, its user and the
 * user's steward.
 */
export const Presented = Schema.Struct({
  credential: CredentialRow,
  lineage: Schema.NullOr(Schema.Struct({ id: Schema.BigInt, revoked_at: Schema.NullOr(Schema.Date) })),
  executor: Schema.NullOr(ExecutorRow),
  executorAgent: Schema.NullOr(AgentStanding),
  executorAgentSteward: Schema.NullOr(StewardStanding),
  user: Schema.NullOr(UserRow),
  steward: Schema.NullOr(UserRow)
})
export type Presented = typeof Presented.Type

/** Each part of `Presented`: the table alias it is read from, and its columns. */
const presentedParts = {
  credential: ["c", CredentialRow],
  lineage: ["l", Presented.fields.lineage.members[0]],
  executor: ["e", ExecutorRow],
  executorAgent: ["ea", AgentStanding],
  executorAgentSteward: ["eas", StewardStanding],
  user: ["u", UserRow],
  steward: ["s", UserRow]
} as const

/** The statement's row is flat: a part's column `x` is named `<part>__x`. */
const presentedColumns = Object.entries(presentedParts)
  .flatMap(([part, [alias, row]]) =>
    Object.keys(row.fields).map((column) => `${alias}.${column} AS "${part}__${column}"`)
  )
  .join(", ")

/** The flat row, parted; an absent part (its id null: a LEFT JOIN found no row) is null. */
const PresentedColumns = Schema.Record(Schema.String, Schema.Unknown).pipe(
  Schema.decodeTo(
    Presented,
    SchemaTransformation.transform({
      decode: (flat) =>
        Object.fromEntries(
          Object.entries(presentedParts).map(([part, [, row]]) => [
            part,
            flat[`${part}__id`] === null
              ? null
              : Object.fromEntries(Object.keys(row.fields).map((column) => [column, flat[`${part}__${column}`]]))
          ])
        ) as unknown as typeof Presented.Encoded,
      encode: (parted) =>
        Object.fromEntries(
          Object.entries(presentedParts).flatMap(([part, [, row]]) =>
            Object.keys(row.fields).map((column) => [
              `${part}__${column}`,
              (parted[part as keyof typeof parted] as Record<string, unknown> | null)?.[column] ?? null
            ])
          )
        )
    })
  )
)

const presentedByLookup = Rows.maybe("Credentials.findPresented", {
  Request: Schema.Struct({ lookup: Schema.String }),
  Result: PresentedColumns,
  execute: ({ lookup }, sql) => sql`
    SELECT ${sql.literal(presentedColumns)}
    FROM credentials c
    LEFT JOIN credential_lineages l ON l.id = c.lineage_id
    LEFT JOIN executors e ON e.id = c.executor_id
    LEFT JOIN users ea ON ea.id = e.agent_id
    LEFT JOIN users eas ON eas.id = ea.steward_id
    LEFT JOIN users u ON u.id = c.user_id
    LEFT JOIN users s ON s.id = u.steward_id
    WHERE c.lookup = ${lookup}`
})

/** A credential by its lookup, with every row authenticating it judges (one statement). */
const findPresented = (lookup: string) => presentedByLookup({ lookup })

const lineageById = Rows.maybe("Credentials.findLineage", {
  Request: Schema.Struct({ id: Schema.BigInt }),
  Result: LineageRow,
  execute: ({ id }, sql) => sql`SELECT * FROM credential_lineages WHERE id = ${id}`
})

const findLineage = (id: bigint) => lineageById({ id })

/** Marks every live credential of the lineage superseded (a rotation is about to mint new ones). */
const supersedeLineageCredentials = Effect.fnUntraced(function* (lineageId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`
    UPDATE credentials SET superseded_at = ${now}
    WHERE lineage_id = ${lineageId} AND superseded_at IS NULL AND revoked_at IS NULL`
})

/** Ends a lineage: it and every credential in it stop working. */
const revokeLineage = Effect.fnUntraced(function* (lineageId: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE credential_lineages SET revoked_at = ${now} WHERE id = ${lineageId} AND revoked_at IS NULL`
  yield* sql`UPDATE credentials SET revoked_at = ${now} WHERE lineage_id = ${lineageId} AND revoked_at IS NULL`
})

const liveLineages = Rows.all("Credentials.revokeHolderLineages", {
  Request: Schema.Struct({
    holder: Holder,
    userId: Schema.UndefinedOr(Schema.BigInt),
    executorId: Schema.UndefinedOr(Schema.BigInt)
  }),
  Result: Schema.Struct({ id: Schema.BigInt }),
  execute: ({ holder, userId, executorId }, sql) => sql`
    SELECT id FROM credential_lineages
    WHERE holder = ${holder} AND revoked_at IS NULL
      AND ${userId === undefined ? sql`true` : sql`user_id = ${userId}`}
      AND ${executorId === undefined ? sql`true` : sql`executor_id = ${executorId}`}`
})

/** Ends every live lineage of a holder (a reconnect supersedes the previous device's). */
const revokeHolderLineages = Effect.fnUntraced(function* (
  holder: Holder,
  owner: { readonly userId?: bigint; readonly executorId?: bigint },
  now: Date
) {
  const lineages = yield* liveLineages({ holder, userId: owner.userId, executorId: owner.executorId })
  for (const lineage of lineages) yield* revokeLineage(lineage.id, now)
})

const personalTokens = Rows.all("Credentials.listPersonalTokens", {
  Request: Schema.Struct({ userId: Schema.BigInt }),
  Result: CredentialRow,
  execute: ({ userId }, sql) => sql`
    SELECT * FROM credentials
    WHERE user_id = ${userId} AND kind = 'access' AND lineage_id IS NULL
    ORDER BY issued_at DESC, id DESC`
})

/** A human's personal access tokens (access credentials outside any lineage), newest first. */
const listPersonalTokens = (userId: bigint) => personalTokens({ userId })

const personalToken = Rows.maybe("Credentials.findPersonalToken", {
  Request: Schema.Struct({ userId: Schema.BigInt, publicId: Schema.String }),
  Result: CredentialRow,
  execute: ({ userId, publicId }, sql) => sql`
    SELECT * FROM credentials
    WHERE public_id = ${publicId} AND user_id = ${userId} AND kind = 'access' AND lineage_id IS NULL`
})

/** One of a human's personal access tokens, by its public id (a UUID). */
const findPersonalToken = (userId: bigint, publicId: string) => personalToken({ userId, publicId })

const revokeCredential = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  yield* sql`UPDATE credentials SET revoked_at = ${now} WHERE id = ${id} AND revoked_at IS NULL`
})

/** Supersedes one credential if it is still current; answers false when another rotation won. */
const supersedeCredential = Effect.fnUntraced(function* (id: bigint, now: Date) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    UPDATE credentials SET superseded_at = ${now}
    WHERE id = ${id} AND superseded_at IS NULL AND revoked_at IS NULL RETURNING id`
  return rows.length > 0
})

export class CredentialsRepository extends Context.Service<CredentialsRepository>()(
  "@troupe/storage/CredentialsRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        insertLineage,
        insertCredential,
        findCredentialByLookup,
        findPresented,
        findLineage,
        supersedeLineageCredentials,
        revokeLineage,
        revokeHolderLineages,
        listPersonalTokens,
        findPersonalToken,
        revokeCredential,
        supersedeCredential
      })
    )
  }
) {
  static readonly layer = Layer.effect(CredentialsRepository, CredentialsRepository.make)
}
