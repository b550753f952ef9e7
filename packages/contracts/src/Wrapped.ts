// The member plane's reading of a request body (SUPPLEMENT "General shapes"): `{name: {...}}` is
// canonical and the same members at top level are accepted; /openapi.json shows the wrapped form.
import { Schema, SchemaAST, SchemaTransformation } from "effect"

const isObject = (value: unknown) => typeof value === "object" && value !== null && !Array.isArray(value)

/** The schema of the member of `members` called `name`, when `members` is a struct that has one. */
const memberNamed = (members: Schema.Top, name: string) => {
  const found = SchemaAST.isObjects(members.ast)
    ? members.ast.propertySignatures.find((member) => member.name === name)
    : undefined
  return found && Schema.make<Schema.Codec<unknown>>(found.type)
}

/**
 * A body whose `members` sit under `name` or at top level. When `name` is present only its
 * members are read (a non-object there is 400 parameter_invalid naming it); otherwise the top
 * level is. Decoding failures name the member as sent (`memory.path` or `path`). When `name` is
 * also one of the members (`{access_mode: {access_mode, lock_version}}`), a non-object under it
 * is that member, so the top-level form `{access_mode: "private", lock_version}` reads too.
 */
export const wrappedOrTopLevel = <const Name extends string, Members extends Schema.Top>(
  name: Name,
  members: Members
) => {
  const alsoMember = memberNamed(members, name)
  const under = alsoMember ? Schema.Union([members, alsoMember]) : members
  const body = Schema.StructWithRest(Schema.Struct({ [name]: Schema.optionalKey(under) }), [
    Schema.Record(Schema.String, Schema.Unknown)
  ])
  const wrapped = (sent: Readonly<Record<string, unknown>>) =>
    Object.hasOwn(sent, name) && (alsoMember === undefined || isObject(sent[name]))
  return body.pipe(
    Schema.decodeTo(
      members,
      SchemaTransformation.transform({
        decode: (sent: Readonly<Record<string, unknown>>) => (wrapped(sent) ? sent[name] : sent) as Members["Encoded"],
        encode: (value) => ({ [name]: value }) as typeof body.Type
      })
    )
  )
}
