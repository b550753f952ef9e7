// The current time as a Date, from Effect's Clock so tests can move it.
import { Clock, Effect } from "effect"

export const now: Effect.Effect<Date> = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))
