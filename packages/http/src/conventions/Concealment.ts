// Concealment: a resource the caller cannot see answers 404 not_found, exactly like absence.
import { errors } from "@troupe/contracts/Errors"
import { Effect } from "effect"

export const visibleOrNotFound = <A>(resource: A | undefined, canSee: (resource: A) => boolean) =>
  resource !== undefined && canSee(resource) ? Effect.succeed(resource) : Effect.fail(errors.notFound())
