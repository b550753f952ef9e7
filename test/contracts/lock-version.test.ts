// `?lock_version=` as the contract reads it (the DELETEs of workspaces and store entries): a
// LockVersion's decimal digits; absent or empty is 400 parameter_missing, other text 400
// parameter_invalid, and the client sends a number as its digits.
import { LockVersionQuery } from "@troupe/contracts/LockVersion"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Exit, Schema } from "effect"
import { HttpApiError } from "effect/http-api"
import { expect, it } from "vitest"

const Query = Schema.Struct({ lock_version: LockVersionQuery })

const answer = (query: unknown) => {
  const error = Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(Query)(query)))
  const failure = describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Query", cause: error }))
  return [failure.status, failure.code, failure.message]
}

it("reads the digits of 0 to 2147483647 as a number, and encodes a number as its digits", () => {
  for (const [text, version] of [
    ["0", 0],
    ["007", 7],
    ["2147483647", 2147483647]
  ] as const) {
    expect(Schema.decodeUnknownExit(Query)({ lock_version: text })).toEqual(Exit.succeed({ lock_version: version }))
  }
  expect(Schema.encodeSync(Query)({ lock_version: 12 })).toEqual({ lock_version: "12" })
})

it("answers absent or empty 400 parameter_missing, any other text 400 parameter_invalid", () => {
  const missing = [400, "parameter_missing", "query parameter lock_version is required"]
  expect(answer({})).toEqual(missing)
  expect(answer({ lock_version: "" })).toEqual(missing)
  for (const text of ["abc", "-1", "1.5", "2147483648", "99999999999", "1e2", "0x1", " 1", ["0", "0"]]) {
    expect(answer({ lock_version: text }).slice(0, 2), String(text)).toEqual([400, "parameter_invalid"])
  }
})
