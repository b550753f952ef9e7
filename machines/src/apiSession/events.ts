// Events the API session machine accepts, as a schema: the host refuses any other shape.
import { Schema } from "effect"

export const ApiSessionEvent = Schema.Union([
  /** DELETE /api/v1/session with the session's own bearer (or sign-out of a browser session). */
  Schema.Struct({ type: Schema.Literal("session.revoke") }),
  /** The 30-day timer set at issuance. */
  Schema.Struct({ type: Schema.Literal("session.expire") })
])

export type ApiSessionEvent = typeof ApiSessionEvent.Type
