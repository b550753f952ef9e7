// Optimistic concurrency: lock_version is an integer from 0 to 2147483647. Missing is
// parameter_missing, anything else malformed is parameter_invalid, a stale one is stale_object.
import { errors } from "@troupe/contracts/Errors"
import { Effect } from "effect"

const max = 2147483647

/** A JSON integer from a body, or its decimal text from a query string (`?lock_version=`). */
export const parseLockVersion = (value: unknown, from: "body" | "query" = "body") => {
  if (value === undefined || (from === "query" && value === "")) {
    return Effect.fail(errors.parameterMissing("lock_version is required"))
  }
  const number = from === "query" && typeof value === "string" && /^\d{1,10}$/.test(value) ? Number(value) : value
  if (typeof number !== "number" || !Number.isInteger(number) || number < 0 || number > max) {
    return Effect.fail(errors.parameterInvalid(`lock_version must be an integer from 0 to ${max}`))
  }
  return Effect.succeed(number)
}

export const staleObject = () =>
  errors.conflict("stale_object", "The resource changed since you read it; read it again and retry")

/** Fails with stale_object unless the presented version is the current one. */
export const requireCurrent = (presented: number, current: number) =>
  presented === current ? Effect.void : Effect.fail(staleObject())
