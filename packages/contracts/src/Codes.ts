// The spec's error code a request member's failure answers, carried on the schema itself: a
// schema (or one of its checks) annotated with `coded(code)` / `{ [specCode]: code }` makes a
// decoding failure inside it answer that code, with the status the Errors table gives it; a
// failure under no coded schema answers 400 parameter_missing / parameter_invalid.
import type { Schema } from "effect"
import type { ErrorCode } from "./Errors.ts"

/** The annotation key holding a spec error code. */
export const specCode = "troupe/specCode"

/** Annotates a schema with the spec code its decoding failures answer. */
export const coded =
  (code: ErrorCode) =>
  <S extends Schema.Top>(schema: S): S["Rebuild"] =>
    schema.annotate({ [specCode]: code })
