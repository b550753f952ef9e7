// Optimistic concurrency: lock_version is an integer from 0 to 2147483647. Missing is
// parameter_missing, anything else malformed is parameter_invalid, a stale one is stale_object.
import { errors } from "@troupe/contracts/Errors"
import { Effect } from "effect"

const max = 2147483647

/** Accepts a JSON integer, or (from a query string) its decimal text. */
export const parseLockVersion = (value: unknown) => {
  if (value === undefined || value === null || value === "") {
    return Effect.fail(errors.parameterMissing("lock_version is required"))
  }
  const number = typeof value === "string" && /^\d{1,10}$/.test(value) ? Number(value) : value
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
