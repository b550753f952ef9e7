// Optimistic concurrency on the wire: a lock_version is an integer from 0 to 2147483647. Absent is
// 400 parameter_missing, anything else malformed 400 parameter_invalid; whether it is the current
// one is the subject's actor's to judge (409 stale_object).
import { Schema } from "effect"

export const LockVersion = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2147483647 })).annotate({
  description: "The lock_version as last read (an integer from 0 to 2147483647)"
})
