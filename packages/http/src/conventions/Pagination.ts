// Keyset pagination: parses after/limit/order, and pages rows fetched one past the limit. The
// cursor is base64url JSON of the last row's key and the direction it was read in, so it cannot
// be continued the other way, and each list says which keys it issues, so a forged cursor is
// refused here rather than reaching a query.
import { errors } from "@troupe/contracts/Errors"
import { isPublicId } from "@troupe/contracts/PublicId"
import { Effect } from "effect"

export type Order = "asc" | "desc"
export type Key = ReadonlyArray<string | number>

export interface Page<K extends Key = Key> {
  readonly after: K | undefined
  readonly limit: number
  readonly order: Order
}

export interface PageQuery {
  readonly after?: string | undefined
  readonly limit?: string | undefined
  readonly order?: string | undefined
}

/** The key of a list ordered by public id. */
export const publicIdKey = (key: Key): key is readonly [string] =>
  key.length === 1 && typeof key[0] === "string" && isPublicId(key[0])

/** The key of a list ordered by two strings (store entries: namespace, then key). */
export const stringPairKey = (key: Key): key is readonly [string, string] =>
  key.length === 2 && key.every((part) => typeof part === "string")

export const encodeCursor = (key: Key, order: Order): string =>
  Buffer.from(JSON.stringify({ k: key, d: order })).toString("base64url")

const decodeCursor = (cursor: string): { readonly key: Key; readonly order: Order } | undefined => {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"))
    if (typeof value !== "object" || value === null) return undefined
    const { k, d } = value as { k?: unknown; d?: unknown }
    if ((d !== "asc" && d !== "desc") || !Array.isArray(k) || k.length === 0) return undefined
    if (!k.every((part) => typeof part === "string" || typeof part === "number")) return undefined
    return { key: k, order: d }
  } catch {
    return undefined
  }
}

export const parsePage = <K extends Key>(
  query: PageQuery,
  issued: (key: Key) => key is K,
  defaultLimit = 25,
  maxLimit = 100
) =>
  Effect.gen(function* () {
    const order = query.order === undefined ? "asc" : query.order
    if (order !== "asc" && order !== "desc") {
      return yield* errors.parameterInvalid("order must be asc or desc")
    }
    let limit = defaultLimit
    if (query.limit !== undefined) {
      if (!/^\d{1,4}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > maxLimit) {
        return yield* errors.parameterInvalid(`limit must be an integer from 1 to ${maxLimit}`)
      }
      limit = Number(query.limit)
    }
    if (query.after === undefined || query.after === "") return { after: undefined, limit, order } satisfies Page<K>
    const cursor = decodeCursor(query.after)
    if (!cursor || !issued(cursor.key)) return yield* errors.parameterInvalid("after is not a cursor this list issued")
    if (cursor.order !== order) {
      return yield* errors.parameterInvalid(`after continues a ${cursor.order} listing; ask with order=${cursor.order}`)
    }
    return { after: cursor.key, limit, order } satisfies Page<K>
  })

/** Cuts rows fetched with `limit + 1` to the page and names where the next page starts. */
export const pageOf = <A>(rows: ReadonlyArray<A>, page: Page, keyOf: (row: A) => Key) => {
  const items = rows.slice(0, page.limit)
  const last = items[items.length - 1]
  return {
    items,
    pagination: {
      next_after: rows.length > page.limit && last !== undefined ? encodeCursor(keyOf(last), page.order) : null
    }
  }
}
