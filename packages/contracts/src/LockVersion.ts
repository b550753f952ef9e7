// Optimistic concurrency on the wire: a lock_version is an integer from 0 to 2147483647. Absent is
// 400 parameter_missing, anything else malformed 400 parameter_invalid; whether it is the current
// one is the subject's actor's to judge (409 stale_object). A DELETE carries it as `?lock_version=`.
import { Schema, SchemaTransformation } from "effect"
import { specCode } from "./Codes.ts"

export const LockVersion = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 2147483647 })).annotate({
  description: "The lock_version as last read (an integer from 0 to 2147483647)"
})

/** `?lock_version=`: a LockVersion's decimal digits. Empty reads as absent (400 parameter_missing). */
export const LockVersionQuery = Schema.String.check(
  Schema.makeFilter((text: string) => text !== "", { expected: "a lock_version", [specCode]: "parameter_missing" }),
  Schema.isPattern(/^\d{1,10}$/, { expected: "the decimal digits of an integer from 0 to 2147483647" })
).pipe(Schema.decodeTo(LockVersion, SchemaTransformation.transform({ decode: Number, encode: String })))
