// The member plane's reading of a request body (SUPPLEMENT "General shapes"): `{name: {...}}` is
// canonical and the same members at top level are accepted; /openapi.json shows the wrapped form.
import { Schema, SchemaTransformation } from "effect"

/**
 * A body whose `members` sit under `name` or at top level. When `name` is present only its
 * members are read (a non-object there is 400 parameter_invalid naming it); otherwise the top
 * level is. Decoding failures name the member as sent (`memory.path` or `path`).
 */
export const wrappedOrTopLevel = <const Name extends string, Members extends Schema.Top>(
  name: Name,
  members: Members
) => {
  const body = Schema.StructWithRest(Schema.Struct({ [name]: Schema.optionalKey(members) }), [
    Schema.Record(Schema.String, Schema.Unknown)
  ])
  return body.pipe(
    Schema.decodeTo(
      members,
      SchemaTransformation.transform({
        decode: (sent: Readonly<Record<string, unknown>>) =>
          (Object.hasOwn(sent, name) ? sent[name] : sent) as Members["Encoded"],
        encode: (value) => ({ [name]: value }) as typeof body.Type
      })
    )
  )
}
