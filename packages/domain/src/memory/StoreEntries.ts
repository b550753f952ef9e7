// Store entries on a host (the acting principal's profile, a workspace, a conversation): the
// value bound, the per-host entry limit, unique keys, lock_version fencing, and the request
// budget. The namespace and key grammar is the contract's (printable, 1 to 80 and 160). Who may use a host (authority, concealment) is the caller's business:
// every method takes a host the caller has already been allowed to use.

import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/StoreEntries"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { now } from "../kernel/Now.ts"
import type { RateLimit } from "../kernel/RateLimiter.ts"
import { Absent, BadParameter, Stale, StateConflict, TooLarge } from "../kernel/Refusals.ts"

export type StoreEntryHost = Repo.Host
export type StoreEntryHostKind = Repo.HostKind
export type StoreEntryRow = Repo.StoreEntryRow
export type StoreEntrySummaryRow = Repo.StoreEntrySummaryRow

/** The spec's limits: 64 entries per host, values up to 1 MiB of canonical JSON. */
export const maxEntriesPerHost = 64
export const maxValueBytes = 1024 * 1024

/**
 * The request budget: 6,000 requests per minute per caller over every store-entry route of every
 * host. A Reference so a server (or a test) can provide another figure.
 */
export const StoreEntryRequestLimit = Context.Reference<RateLimit>("@troupe/domain/StoreEntryRequestLimit", {
  defaultValue: () => ({ scope: "store_entries", limit: 6000, windowSeconds: 60 })
})

const notFound = () => new Absent({ code: "not_found", message: "Not found" })

/** The host already has an entry under (namespace, key). */
const keyTaken = () =>
  new StateConflict({ code: "key_taken", message: "This host already has an entry under that namespace and key" })

/** The presented lock_version is not the entry's current one. */
const stale = () =>
  new Stale({ code: "stale_object", message: "The resource changed since you read it; read it again and retry" })

/** What a value refuses: a string that is not valid Unicode (a lone surrogate), or over the bound. */
export type ValueRefusal = BadParameter | TooLarge

export interface StoreEntryPage {
  readonly after: readonly [namespace: string, key: string] | undefined
  readonly order: "asc" | "desc"
  /** Rows to fetch (a caller paging by `limit` asks for one more to see whether a page follows). */
  readonly limit: number
}

/** Every string of the value (object member names too) is valid Unicode. */
const wellFormed = (value: unknown): boolean => {
  if (typeof value === "string") return value.isWellFormed()
  if (Array.isArray(value)) return value.every(wellFormed)
  if (value !== null && typeof value === "object") {
    return Object.entries(value).every(([name, member]) => name.isWellFormed() && wellFormed(member))
  }
  return true
}

/** The value as the JSON text to store, after its checks: valid Unicode, at most maxValueBytes. */
export const valueJson = (value: unknown): Effect.Effect<string, ValueRefusal> =>
  Effect.gen(function* () {
    if (value === undefined || !wellFormed(value)) {
      return yield* new BadParameter({
        code: "parameter_invalid",
        message: "store_entry.value must be JSON with valid Unicode strings"
      })
    }
    // Canonical JSON (sorted members, no whitespace) has exactly the length of this text.
    const text = JSON.stringify(value)
    if (Buffer.byteLength(text, "utf8") > maxValueBytes) {
      return yield* new TooLarge({
        code: "content_too_large",
        message: "store_entry.value is over 1 MiB of canonical JSON"
      })
    }
    return text
  })

export class StoreEntries extends Context.Service<
  StoreEntries,
  {
    readonly list: (host: StoreEntryHost, page: StoreEntryPage) => Effect.Effect<ReadonlyArray<StoreEntrySummaryRow>>
    readonly create: (
      host: StoreEntryHost,
      entry: { readonly namespace: string; readonly key: string; readonly value: unknown }
    ) => Effect.Effect<StoreEntryRow, ValueRefusal | StateConflict>
    readonly get: (host: StoreEntryHost, publicId: string) => Effect.Effect<StoreEntryRow, Absent>
    readonly replaceValue: (
      host: StoreEntryHost,
      publicId: string,
      lockVersion: number,
      value: unknown
    ) => Effect.Effect<StoreEntryRow, ValueRefusal | Absent | Stale>
    readonly remove: (
      host: StoreEntryHost,
      publicId: string,
      lockVersion: number
    ) => Effect.Effect<void, Absent | Stale>
  }
>()("@troupe/domain/StoreEntries") {
  static readonly layer = Layer.effect(
    StoreEntries,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)
      const entries = yield* Repo.StoreEntriesRepository

      // Public ids are UUIDs; anything else names no entry (and must not reach a uuid cast).
      const get = (host: StoreEntryHost, publicId: string) =>
        Effect.gen(function* () {
          const row = isUuid(publicId) ? yield* db(entries.findEntry(host, publicId)) : undefined
          if (!row) return yield* notFound()
          return row
        })

      /** Why a fenced write matched nothing: the entry is gone, or it moved on. */
      const missOrStale = (host: StoreEntryHost, publicId: string) =>
        Effect.flatMap(get(host, publicId), () => Effect.fail(stale()))

      return StoreEntries.of({
        list: (host, page) => db(entries.listEntries(host, page)),

        create: (host, entry) =>
          Effect.gen(function* () {
            const { namespace, key } = entry
            const text = yield* valueJson(entry.value)
            const at = yield* now
            // Under the host's lock nothing else creates on this host, so the checks hold.
            return yield* db(
              Effect.gen(function* () {
                yield* entries.lockHost(host)
                if (yield* entries.findByKey(host, namespace, key)) return yield* keyTaken()
                if ((yield* entries.countEntries(host)) >= maxEntriesPerHost) {
                  return yield* new StateConflict({
                    code: "entry_limit_reached",
                    message: `This host already holds ${maxEntriesPerHost} store entries`
                  })
                }
                const row = yield* entries.insertEntry({
                  publicId: newPublicId(),
                  host,
                  namespace,
                  key,
                  valueJson: text,
                  now: at
                })
                if (!row) return yield* keyTaken()
                return row
              }).pipe(sql.withTransaction)
            )
          }),

        get,

        replaceValue: (host, publicId, lockVersion, value) =>
          Effect.gen(function* () {
            const text = yield* valueJson(value)
            const row = isUuid(publicId)
              ? yield* db(entries.replaceValue(host, publicId, lockVersion, text, yield* now))
              : undefined
            return row ?? (yield* missOrStale(host, publicId))
          }),

        remove: (host, publicId, lockVersion) =>
          Effect.gen(function* () {
            const deleted = isUuid(publicId) ? yield* db(entries.deleteEntry(host, publicId, lockVersion)) : false
            if (!deleted) yield* missOrStale(host, publicId)
          })
      })
    })
  )
}
