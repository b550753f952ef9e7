// Keyset pagination on the wire: query `after` (opaque cursor), `limit` (1..100, default 25),
// `order` (asc|desc); responses carry `pagination.next_after`.
import { Schema } from "effect"

export const PageQuery = {
  after: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.String),
  order: Schema.optional(Schema.String)
}

export const Pagination = Schema.Struct({
  next_after: Schema.NullOr(Schema.String)
})
