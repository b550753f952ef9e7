// Spec codes on schema annotations (issue 9): a decoding failure inside a schema or check
// annotated with `coded(code)` answers that code at its status, naming the member; the nearest
// annotation wins; a failure under no coded schema keeps 400 parameter_missing/parameter_invalid.
import { coded, specCode } from "@troupe/contracts/Codes"
import { wrappedOrTopLevel } from "@troupe/contracts/Wrapped"
import { describeDecodeFailure } from "@troupe/http/conventions/SchemaIssues"
import { Effect, Schema } from "effect"
import { HttpApiError } from "effect/http-api"
import { describe, expect, it } from "vitest"

const failureOf = (schema: Schema.Codec<unknown, unknown>, input: unknown) => {
  const error = Effect.runSync(Effect.flip(Schema.decodeUnknownEffect(schema)(input)))
  return describeDecodeFailure(new HttpApiError.HttpApiSchemaError({ kind: "Payload", cause: error }))
}

const printable = Schema.makeFilter((text: string) => !/[\p{Cc}]/u.test(text), { expected: "printable text" })

const Body = wrappedOrTopLevel(
  "memory",
  Schema.Struct({
    path: Schema.String.pipe(coded("memory_path_invalid")).check(
      printable,
      Schema.makeFilter((text: string) => !text.startsWith("conversation/skills/"), {
        expected: "a path outside conversation/skills/",
        [specCode]: "skill_scope_unavailable"
      })
    ),
    limit: Schema.optionalKey(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 500 }))),
    configuration: Schema.optionalKey(
      Schema.Struct({
        hooks: Schema.Array(Schema.Struct({ tool: Schema.String, input: Schema.optionalKey(Schema.Unknown) })),
        access: Schema.optionalKey(Schema.Literals(["read", "read_write"]).pipe(coded("invalid_approval_mode")))
      }).pipe(coded("validation_failed"))
    )
  })
)

describe("coded schemas", () => {
  it("a coded member's failure answers its code at its status, naming the member as sent", () => {
    expect(failureOf(Body, { memory: { path: 5 } })).toMatchObject({
      code: "memory_path_invalid",
      status: 422,
      message: expect.stringContaining("body member memory.path")
    })
    expect(failureOf(Body, { path: "user/\u0007" })).toMatchObject({
      code: "memory_path_invalid",
      status: 422,
      message: expect.stringMatching(/^body member path is invalid: .*printable text/)
    })
  })

  it("a coded check is nearer than its schema's code", () => {
    expect(failureOf(Body, { path: "conversation/skills/a" })).toMatchObject({
      code: "skill_scope_unavailable",
      status: 422
    })
  })

  it("nested: the nearest coded schema above the failing member wins, absence included", () => {
    const wrongType = failureOf(Body, { path: "user/a", configuration: { hooks: [{ tool: 1 }] } })
    expect(wrongType).toMatchObject({ code: "validation_failed", status: 422 })
    expect(wrongType.message).toContain("configuration.hooks.0.tool")
    const absent = failureOf(Body, { path: "user/a", configuration: { hooks: [{}] } })
    expect(absent).toMatchObject({
      code: "validation_failed",
      status: 422,
      message: "body member configuration.hooks.0.tool is required"
    })
    expect(failureOf(Body, { path: "user/a", configuration: { hooks: [], access: "write" } })).toMatchObject({
      code: "invalid_approval_mode",
      status: 422
    })
  })

  it("uncoded failures keep 400 parameter_missing and parameter_invalid", () => {
    expect(failureOf(Body, { memory: {} })).toEqual({
      code: "parameter_missing",
      status: 400,
      message: "body member memory.path is required",
      malformedJson: false
    })
    expect(failureOf(Body, { path: "user/a", limit: 0 })).toMatchObject({
      code: "parameter_invalid",
      status: 400,
      message: expect.stringContaining("body member limit is invalid")
    })
    expect(failureOf(Body, { memory: 5 })).toMatchObject({ code: "parameter_invalid", status: 400 })
  })

  it("an annotation that is not a spec code is ignored", () => {
    const schema = Schema.Struct({ a: Schema.String.annotate({ [specCode]: "no_such_code" }) })
    expect(failureOf(schema, { a: 1 })).toMatchObject({ code: "parameter_invalid", status: 400 })
  })
})
