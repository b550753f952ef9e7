// Store entries on a host (the acting principal's profile, a workspace, a conversation): the
// namespace and key grammar, the value bound, the per-host entry limit, lock_version fencing,
// and the request budget. Who may use a host (authority, concealment) is the caller's business:
// every method takes a host the caller has already been allowed to use.

import { withDatabase } from "@troupe/storage/Defects"
import { isUuid, newPublicId } from "@troupe/storage/Ids"
import * as Repo from "@troupe/storage/repositories/StoreEntries"
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { InvalidInput } from "./Errors.ts"
import { now } from "./Now.ts"
import type { RateLimit } from "./RateLimiter.ts"

export type StoreEntryHost = Repo.Host
export type StoreEntryHostKind = Repo.HostKind
export type StoreEntryRow = Repo.StoreEntryRow
export type StoreEntrySummaryRow = Repo.StoreEntrySummaryRow

/** The spec's limits: 64 entries per host, values up to 1 MiB of canonical JSON. */
export const maxEntriesPerHost = 64
export const maxValueBytes = 1024 * 1024

/** namespace: 1 to 64 of a-z 0-9 _ . - starting with a letter or digit. */
export const namespacePattern = /^[a-z0-9][a-z0-9_.-]{0,63}$/
/** key: 1 to 255 code points, none of them a control character, line or paragraph separator. */
export const maxKeyLength = 255

/**
 * The request budget: 6,000 requests per minute per caller over every store-entry route of every
 * host. A Reference so a server (or a test) can provide another figure.
 */
export const StoreEntryRequestLimit = Context.Reference<RateLimit>("@troupe/domain/StoreEntryRequestLimit", {
  defaultValue: () => ({ scope: "store_entries", limit: 6000, windowSeconds: 60 })
})

export class StoreEntryNotFound extends Schema.TaggedError<StoreEntryNotFound>()("StoreEntryNotFound", {}) {}

/** The host already has an entry under (namespace, key). */
export class StoreEntryKeyTaken extends Schema.TaggedError<StoreEntryKeyTaken>()("StoreEntryKeyTaken", {}) {}

/** The host holds maxEntriesPerHost entries already. */
export class StoreEntryLimitReached extends Schema.TaggedError<StoreEntryLimitReached>()(
  "StoreEntryLimitReached",
  {}
) {}

/** The presented lock_version is not the entry's current one. */
export class StoreEntryStale extends Schema.TaggedError<StoreEntryStale>()("StoreEntryStale", {}) {}

export class StoreEntryValueTooLarge extends Schema.TaggedError<StoreEntryValueTooLarge>()("StoreEntryValueTooLarge", {
  bytes: Schema.Number
}) {}

export interface StoreEntryPage {
  readonly after: readonly [namespace: string, key: string] | undefined
  readonly order: "asc" | "desc"
  /** Rows to fetch (a caller paging by `limit` asks for one more to see whether a page follows). */
  readonly limit: number
}

// Control characters (C0, DEL, C1), line and paragraph separators.
const unprintable = /[\p{Cc}\u2028\u2029]/u

const checkNamespace = (namespace: string) =>
  namespacePattern.test(namespace)
    ? Effect.void
    : Effect.fail(
        new InvalidInput({
          field: "namespace",
          message:
            "namespace must be 1 to 64 characters of a-z, 0-9, underscore, dot and dash, starting with a letter or digit"
        })
      )

const checkKey = (key: string) => {
  const length = [...key].length
  return length >= 1 && length <= maxKeyLength && key.isWellFormed() && !unprintable.test(key)
    ? Effect.void
    : Effect.fail(
        new InvalidInput({
          field: "key",
          message: `key must be 1 to ${maxKeyLength} printable characters (no control characters)`
        })
      )
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
export const valueJson = (value: unknown) =>
  Effect.gen(function* () {
    if (value === undefined || !wellFormed(value)) {
      return yield* new InvalidInput({ field: "value", message: "value must be JSON with valid Unicode strings" })
    }
    // Canonical JSON (sorted members, no whitespace) has exactly the length of this text.
    const text = JSON.stringify(value)
    const bytes = Buffer.byteLength(text, "utf8")
    if (bytes > maxValueBytes) return yield* new StoreEntryValueTooLarge({ bytes })
    return text
  })

export class StoreEntries extends Context.Service<
  StoreEntries,
  {
    readonly list: (host: StoreEntryHost, page: StoreEntryPage) => Effect.Effect<ReadonlyArray<StoreEntrySummaryRow>>
    readonly create: (
      host: StoreEntryHost,
      entry: { readonly namespace: string; readonly key: string; readonly value: unknown }
    ) => Effect.Effect<
      StoreEntryRow,
      InvalidInput | StoreEntryValueTooLarge | StoreEntryKeyTaken | StoreEntryLimitReached
    >
    readonly get: (host: StoreEntryHost, publicId: string) => Effect.Effect<StoreEntryRow, StoreEntryNotFound>
    readonly replaceValue: (
      host: StoreEntryHost,
      publicId: string,
      lockVersion: number,
      value: unknown
    ) => Effect.Effect<StoreEntryRow, InvalidInput | StoreEntryValueTooLarge | StoreEntryNotFound | StoreEntryStale>
    readonly remove: (
      host: StoreEntryHost,
      publicId: string,
      lockVersion: number
    ) => Effect.Effect<void, StoreEntryNotFound | StoreEntryStale>
  }
>()("@troupe/domain/StoreEntries") {
  static readonly layer = Layer.effect(
    StoreEntries,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const db = withDatabase(sql)

      // Public ids are UUIDs; anything else names no entry (and must not reach a uuid cast).
      const get = (host: StoreEntryHost, publicId: string) =>
        Effect.gen(function* () {
          const row = isUuid(publicId) ? yield* db(Repo.findEntry(host, publicId)) : undefined
          if (!row) return yield* new StoreEntryNotFound()
          return row
        })

      /** Why a fenced write matched nothing: the entry is gone, or it moved on. */
      const missOrStale = (host: StoreEntryHost, publicId: string) =>
        Effect.flatMap(get(host, publicId), () => Effect.fail(new StoreEntryStale()))

      return StoreEntries.of({
        list: (host, page) => db(Repo.listEntries(host, page)),

        create: (host, entry) =>
          Effect.gen(function* () {
            yield* checkNamespace(entry.namespace)
            yield* checkKey(entry.key)
            const text = yield* valueJson(entry.value)
            const at = yield* now
            // Under the host's lock nothing else creates on this host, so the checks hold.
            return yield* db(
              Effect.gen(function* () {
                yield* Repo.lockHost(host)
                if (yield* Repo.findByKey(host, entry.namespace, entry.key)) return yield* new StoreEntryKeyTaken()
                if ((yield* Repo.countEntries(host)) >= maxEntriesPerHost) return yield* new StoreEntryLimitReached()
                const row = yield* Repo.insertEntry({
                  publicId: newPublicId(),
                  host,
                  namespace: entry.namespace,
                  key: entry.key,
                  valueJson: text,
                  now: at
                })
                if (!row) return yield* new StoreEntryKeyTaken()
                return row
              }).pipe(sql.withTransaction)
            )
          }),

        get,

        replaceValue: (host, publicId, lockVersion, value) =>
          Effect.gen(function* () {
            const text = yield* valueJson(value)
            const row = isUuid(publicId)
              ? yield* db(Repo.replaceValue(host, publicId, lockVersion, text, yield* now))
              : undefined
            return row ?? (yield* missOrStale(host, publicId))
          }),

        remove: (host, publicId, lockVersion) =>
          Effect.gen(function* () {
            const deleted = isUuid(publicId) ? yield* db(Repo.deleteEntry(host, publicId, lockVersion)) : false
            if (!deleted) yield* missOrStale(host, publicId)
          })
      })
    })
  )
}
