// Rows of `store_entries` (JSON values under (namespace, key) on a host) and `store_entry_hosts`
// (the per-host row creates lock). Rules (limits, grammar, fencing) live in the domain.
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"

export type HostKind = "profile" | "workspace" | "conversation"

/** Where entries live: the host's kind and the internal id of its row. */
export interface Host {
  readonly kind: HostKind
  readonly id: bigint
}

export interface StoreEntryRow {
  readonly id: bigint
  readonly public_id: string
  readonly host_kind: HostKind
  readonly host_id: bigint
  readonly namespace: string
  readonly key: string
  readonly value: unknown
  readonly lock_version: number
  readonly created_at: Date
  readonly updated_at: Date
}

/** A row without its value, for lists. */
export type StoreEntrySummaryRow = Omit<StoreEntryRow, "value">

const summaryColumns = "id, public_id, host_kind, host_id, namespace, key, lock_version, created_at, updated_at"

/** Takes the host's row lock for the rest of the transaction (creating the row the first time). */
export const lockHost = Effect.fnUntraced(function* (host: Host) {
  const sql = yield* SqlClient
  yield* sql`
    INSERT INTO store_entry_hosts (host_kind, host_id) VALUES (${host.kind}, ${host.id})
    ON CONFLICT (host_kind, host_id) DO NOTHING`
  yield* sql`SELECT 1 FROM store_entry_hosts WHERE host_kind = ${host.kind} AND host_id = ${host.id} FOR UPDATE`
})

export const countEntries = Effect.fnUntraced(function* (host: Host) {
  const sql = yield* SqlClient
  const rows = yield* sql<{ count: number }>`
    SELECT count(*)::int AS count FROM store_entries WHERE host_kind = ${host.kind} AND host_id = ${host.id}`
  return rows[0]!.count
})

export const findByKey = Effect.fnUntraced(function* (host: Host, namespace: string, key: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<StoreEntrySummaryRow>`
    SELECT ${sql.literal(summaryColumns)} FROM store_entries
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND namespace = ${namespace} AND key = ${key}`
  return rows[0]
})

/** Inserts an entry; answers undefined when the host already has one under (namespace, key). */
export const insertEntry = Effect.fnUntraced(function* (entry: {
  readonly publicId: string
  readonly host: Host
  readonly namespace: string
  readonly key: string
  /** The value's JSON text. */
  readonly valueJson: string
  readonly now: Date
}) {
  const sql = yield* SqlClient
  const rows = yield* sql<StoreEntryRow>`
    INSERT INTO store_entries (public_id, host_kind, host_id, namespace, key, value, created_at, updated_at)
    VALUES (${entry.publicId}, ${entry.host.kind}, ${entry.host.id}, ${entry.namespace}, ${entry.key},
            ${entry.valueJson}::json, ${entry.now}, ${entry.now})
    ON CONFLICT (host_kind, host_id, namespace, key) DO NOTHING
    RETURNING *`
  return rows[0]
})

export const findEntry = Effect.fnUntraced(function* (host: Host, publicId: string) {
  const sql = yield* SqlClient
  const rows = yield* sql<StoreEntryRow>`
    SELECT * FROM store_entries WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}`
  return rows[0]
})

/** One keyset page over (namespace, key) in byte order, after the given key when there is one. */
export const listEntries = Effect.fnUntraced(function* (
  host: Host,
  options: {
    readonly after: readonly [namespace: string, key: string] | undefined
    readonly order: "asc" | "desc"
    readonly limit: number
  }
) {
  const sql = yield* SqlClient
  const after =
    options.after === undefined
      ? sql`TRUE`
      : options.order === "asc"
        ? sql`(namespace, key) > (${options.after[0]} COLLATE "C", ${options.after[1]} COLLATE "C")`
        : sql`(namespace, key) < (${options.after[0]} COLLATE "C", ${options.after[1]} COLLATE "C")`
  const order = options.order === "asc" ? sql`namespace ASC, key ASC` : sql`namespace DESC, key DESC`
  return yield* sql<StoreEntrySummaryRow>`
    SELECT ${sql.literal(summaryColumns)} FROM store_entries
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND ${after}
    ORDER BY ${order}
    LIMIT ${options.limit}`
})

/**
 * Replaces the value where the entry still has the presented lock_version, which then advances
 * (after 2147483647 it starts again at 0). Answers undefined when nothing matched.
 */
export const replaceValue = Effect.fnUntraced(function* (
  host: Host,
  publicId: string,
  lockVersion: number,
  valueJson: string,
  now: Date
) {
  const sql = yield* SqlClient
  const rows = yield* sql<StoreEntryRow>`
    UPDATE store_entries
    SET value = ${valueJson}::json, updated_at = ${now},
        lock_version = CASE WHEN lock_version = 2147483647 THEN 0 ELSE lock_version + 1 END
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}
      AND lock_version = ${lockVersion}
    RETURNING *`
  return rows[0]
})

/** Deletes the entry where it still has the presented lock_version; answers whether it did. */
export const deleteEntry = Effect.fnUntraced(function* (host: Host, publicId: string, lockVersion: number) {
  const sql = yield* SqlClient
  const rows = yield* sql`
    DELETE FROM store_entries
    WHERE host_kind = ${host.kind} AND host_id = ${host.id} AND public_id = ${publicId}
      AND lock_version = ${lockVersion}
    RETURNING id`
  return rows.length > 0
})
