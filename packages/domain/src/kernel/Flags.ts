// A boolean query parameter as the member plane reads one: true or 1, false or 0, absent is false;
// anything else is 400 parameter_invalid naming it.
import { Effect } from "effect"
import { BadParameter } from "./Refusals.ts"

export const flagParameter = (value: string | undefined, name: string) => {
  if (value === undefined || value === "false" || value === "0") return Effect.succeed(false)
  if (value === "true" || value === "1") return Effect.succeed(true)
  return Effect.fail(new BadParameter({ code: "parameter_invalid", message: `${name} must be true, false, 1 or 0` }))
}
