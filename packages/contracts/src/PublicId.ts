// Public identifiers on the wire: UUID strings (internal ids never leave the server).
import { Schema } from "effect"

export const PublicId = Schema.String.check(Schema.isGUID())

/** True when the value is a public id's shape (so a lookup by it can find something). */
export const isPublicId = Schema.is(PublicId)
