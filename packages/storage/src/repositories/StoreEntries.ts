// Rows of `store_entries` (JSON values under (namespace, key) on a host) and `store_entry_hosts`
// (the per-host row creates lock). Rules (limits, grammar, fencing) live in the domain.
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import * as Rows from "./Rows.ts"

export const HostKind = Schema.Literals(["profile", "workspace", "conversation"])
export type HostKind = typeof HostKind.Type

/** Where entries live: the host's kind and the internal id of its row. */
export const Host = Schema.Struct({ kind: HostKind, id: Schema.BigInt })
export type Host = typeof Host.Type

/** A row without its value, for lists. */
export const StoreEntrySummaryRow = Schema.Struct({
  id: Schema.BigInt,
  public_id: Schema.String,
  host_kind: HostKind,
  host_id: Schema.BigInt,
  namespace: Schema.String,
  key: Schema.String,
  lock_version: Schema.Number,
  created_at: Schema.Date,
  updated_at: Schema.Date
})
export type StoreEntrySummaryRow = typeof StoreEntrySummaryRow.Type

/** The value is JSON as written (a `json` column: member order kept). */
export const StoreEntryRow = Schema.Struct({ ...StoreEntrySummaryRow.fields, value: Schema.Unknown })
export type StoreEntryRow = typeof StoreEntryRow.Type

const summaryColumns = "id, public_id, host_kind, host_id, namespace, key, lock_version, created_at, updated_at"

/** Takes the host's row lock for the rest of the transaction (creating the row the first time). */
const lockHost = Effect.fnUntraced(function* (host: Host) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO store_entry_hosts (host_kind, host_id) VALUES (${host.kind}, ${host.id})
    ON CONFLICT (host_kind, host_id) DO NOTHING`
  yield* sql`SELECT 1 FROM store_entry_hosts WHERE host_kind = ${host.kind} AND host_id = ${host.id} FOR UPDATE`
})

const count = Rows.one("StoreEntries.countEntries", {
  Request: Host,
  Result: Schema.Struct({ count: Schema.Number }),
  execute: (host, sql) => sql`
    SELECT count(*)::int AS count FROM store_entries WHERE host_kind = ${host.kind} AND host_id = ${host.id}`
})

const countEntries = (host: Host) => Effect.map(count(host), (row) => row.count)

const byKey = Rows.maybe("StoreEntries.findByKey", {
  Request: Schema.Struct({ host: Host, namespace: Schema.String, key: Schema.String }),
  Result: StoreEntrySummaryRow,
  execute: ({ host, namespace, key }, sql) => sql`
    SELECT ${sql.literal(summaryColumns)} FROM store_entries
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND namespace = ${namespace} AND key = ${key}`
})

const findByKey = (host: Host, namespace: string, key: string) => byKey({ host, namespace, key })

/** Inserts an entry; answers undefined when the host already has one under (namespace, key). */
const insertEntry = Rows.maybe("StoreEntries.insertEntry", {
  Request: Schema.Struct({
    publicId: Schema.String,
    host: Host,
    namespace: Schema.String,
    key: Schema.String,
    /** The value's JSON text. */
    valueJson: Schema.String,
    now: Schema.Date
  }),
  Result: StoreEntryRow,
  execute: (entry, sql) => sql`
    INSERT INTO store_entries (public_id, host_kind, host_id, namespace, key, value, created_at, updated_at)
    VALUES (${entry.publicId}, ${entry.host.kind}, ${entry.host.id}, ${entry.namespace}, ${entry.key},
            ${entry.valueJson}::json, ${entry.now}, ${entry.now})
    ON CONFLICT (host_kind, host_id, namespace, key) DO NOTHING
    RETURNING *`
})

const byPublicId = Rows.maybe("StoreEntries.findEntry", {
  Request: Schema.Struct({ host: Host, publicId: Schema.String }),
  Result: StoreEntryRow,
  execute: ({ host, publicId }, sql) => sql`
    SELECT * FROM store_entries WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}`
})

const findEntry = (host: Host, publicId: string) => byPublicId({ host, publicId })

const PageOptions = Schema.Struct({
  after: Schema.UndefinedOr(Schema.Tuple([Schema.String, Schema.String])),
  order: Schema.Literals(["asc", "desc"]),
  limit: Schema.Number
})

const page = Rows.all("StoreEntries.listEntries", {
  Request: Schema.Struct({ host: Host, options: PageOptions }),
  Result: StoreEntrySummaryRow,
  execute: ({ host, options }, sql) => {
    const after =
      options.after === undefined
        ? sql`TRUE`
        : options.order === "asc"
          ? sql`(namespace, key) > (${options.after[0]} COLLATE "C", ${options.after[1]} COLLATE "C")`
          : sql`(namespace, key) < (${options.after[0]} COLLATE "C", ${options.after[1]} COLLATE "C")`
    const order = options.order === "asc" ? sql`namespace ASC, key ASC` : sql`namespace DESC, key DESC`
    return sql`
      SELECT ${sql.literal(summaryColumns)} FROM store_entries
      WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND ${after}
      ORDER BY ${order}
      LIMIT ${options.limit}`
  }
})

/** One keyset page over (namespace, key) in byte order, after the given key when there is one. */
const listEntries = (
  host: Host,
  options: {
    readonly after: readonly [namespace: string, key: string] | undefined
    readonly order: "asc" | "desc"
    readonly limit: number
  }
) => page({ host, options })

const replace = Rows.maybe("StoreEntries.replaceValue", {
  Request: Schema.Struct({
    host: Host,
    publicId: Schema.String,
    lockVersion: Schema.Number,
    valueJson: Schema.String,
    now: Schema.Date
  }),
  Result: StoreEntryRow,
  execute: ({ host, publicId, lockVersion, valueJson, now }, sql) => sql`
    UPDATE store_entries
    SET value = ${valueJson}::json, updated_at = ${now},
        lock_version = CASE WHEN lock_version = 2147483647 THEN 0 ELSE lock_version + 1 END
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}
      AND lock_version = ${lockVersion}
    RETURNING *`
})

/**
 * Replaces the value where the entry still has the presented lock_version, which then advances
 * (after 2147483647 it starts again at 0). Answers undefined when nothing matched.
 */
const replaceValue = (host: Host, publicId: string, lockVersion: number, valueJson: string, now: Date) =>
  replace({ host, publicId, lockVersion, valueJson, now })

/** Deletes the entry where it still has the presented lock_version; answers whether it did. */
const deleteEntry = Effect.fnUntraced(function* (host: Host, publicId: string, lockVersion: number) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    DELETE FROM store_entries
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}
      AND lock_version = ${lockVersion}
    RETURNING id`
  return rows.length > 0
})

export class StoreEntriesRepository extends Context.Service<StoreEntriesRepository>()(
  "@troupe/storage/StoreEntriesRepository",
  {
    make: Effect.map(SqlClient, (sql) =>
      Rows.bind(sql, {
        lockHost,
        countEntries,
        findByKey,
        insertEntry,
        findEntry,
        listEntries,
        replaceValue,
        deleteEntry
      })
    )
  }
) {
  static readonly layer = Layer.effect(StoreEntriesRepository, StoreEntriesRepository.make)
}
