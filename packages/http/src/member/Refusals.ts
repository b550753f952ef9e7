// Maps a domain refusal (status, code, message) to the endpoint error with that status.
import {
  BadRequest,
  Conflict,
  ContentTooLarge,
  Forbidden,
  NotFound,
  Unauthorized,
  Unprocessable
} from "@troupe/contracts/Errors"
import type { Refused } from "@troupe/domain/Refused"
import { Effect } from "effect"

export type RefusalError = BadRequest | Unauthorized | Forbidden | NotFound | Conflict | ContentTooLarge | Unprocessable

export const answerRefusal = (refused: Refused): Effect.Effect<never, RefusalError> => {
  const error = { code: refused.code, message: refused.message }
  switch (refused.status) {
    case 400:
      return Effect.fail(new BadRequest({ error }))
    case 401:
      return Effect.fail(new Unauthorized({ error }))
    case 403:
      return Effect.fail(new Forbidden({ error }))
    case 409:
      return Effect.fail(new Conflict({ error }))
    case 413:
      return Effect.fail(new ContentTooLarge({ error }))
    case 422:
      return Effect.fail(new Unprocessable({ error }))
    default:
      return Effect.fail(new NotFound({ error }))
  }
}

/** The members of a body in its canonical wrapped form `{name: {...}}`, or at top level. */
export const unwrap = (body: unknown, name: string): Record<string, unknown> => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return {}
  const wrapped = (body as Record<string, unknown>)[name]
  return typeof wrapped === "object" && wrapped !== null && !Array.isArray(wrapped)
    ? (wrapped as Record<string, unknown>)
    : (body as Record<string, unknown>)
}
