// Hostile bodies: malformed and wrongly typed JSON, deep nesting, invalid UTF-8, NUL and lone
// surrogates in values and keys, huge strings, wrong media types, hostile form fields, and hostile
// multipart bodies at the upload doors.
import { randomUUID } from "node:crypto"
import {
  bodyBound,
  deepLevels,
  formFields,
  formText,
  make,
  uploadBoundary,
  type Variant,
  type VariantContext
} from "./hostile-requests.ts"
import { FreeJson, type JsonSchema, type Route } from "./hostile-routes.ts"
import { multipartBody, type Part } from "./uploads.ts"

interface Member {
  readonly path: ReadonlyArray<string | number>
  readonly value: unknown
  /** Which wrong JSON types the member may take: all, only non-objects (free contents), none. */
  readonly typed: "all" | "object" | "none"
}

/** Every member of a sample below the root (objects and arrays walked, at most 6 deep). */
const membersOf = (value: unknown, path: Array<string | number> = [], inFree = false): Array<Member> => {
  if (path.length > 6 || value === null || typeof value !== "object") return []
  const entries: Array<[string | number, unknown]> = Array.isArray(value)
    ? value.map((item, index) => [index, item])
    : Object.entries(value)
  return entries.flatMap(([key, item]) => {
    const at = [...path, key]
    if (item instanceof FreeJson) {
      const typed = inFree || item.anyType ? "none" : "object"
      return [{ path: at, value: item.value, typed }, ...membersOf(item.value, at, true)]
    }
    return [{ path: at, value: item, typed: inFree ? "none" : "all" }, ...membersOf(item, at, inFree)]
  })
}

const replaced = (root: unknown, path: ReadonlyArray<string | number>, value: unknown): unknown => {
  if (path.length === 0) return value
  const [head, ...rest] = path
  if (Array.isArray(root)) return root.map((item, index) => (index === head ? replaced(item, rest, value) : item))
  const object = root as Record<string, unknown>
  return { ...object, [head!]: replaced(object[head!], rest, value) }
}

/** The object at `path` with its first key spoiled by `spoil`. */
const keySpoiled = (root: unknown, path: ReadonlyArray<string | number>, spoil: (key: string) => string) => {
  const at = path.reduce<any>((node, key) => node[key], root) as Record<string, unknown>
  const entries = Object.entries(at)
  const spoiled = Object.fromEntries(entries.map(([key, value], index) => [index === 0 ? spoil(key) : key, value]))
  return replaced(root, path, spoiled)
}

const jsonType = (value: unknown) => (value === null ? "null" : Array.isArray(value) ? "array" : typeof value)
const wrongValues: ReadonlyArray<unknown> = ["1", 1.5, true, null, {}, [1]]

/** Values of another JSON type; null only in place of a number or boolean (elsewhere it may mean "clear"). */
const wrongFor = (member: Member) =>
  member.typed === "none"
    ? []
    : wrongValues.filter(
        (value) =>
          jsonType(value) !== jsonType(member.value) &&
          (value !== null || ["number", "boolean"].includes(jsonType(member.value))) &&
          (member.typed === "all" || jsonType(value) !== "object")
      )

/** A value nested `levels` deep, built as text (no recursion here either). */
const deepArray = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`
const deepObject = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`

const marker = "\u0001HOSTILE\u0001"
/** The JSON text of `body` with `bytes` in place of the marker string's contents. */
const withRawBytes = (body: unknown, bytes: Buffer) => {
  const text = JSON.stringify(body)
  const [before, after] = text.split(JSON.stringify(marker).slice(1, -1))
  return Buffer.concat([Buffer.from(before!), bytes, Buffer.from(after ?? "")])
}

const invalidUtf8: ReadonlyArray<readonly [string, Buffer]> = [
  ["byte FF", Buffer.from([0x61, 0xff, 0x62])],
  ["truncated sequence", Buffer.from([0x61, 0xc3, 0x28])],
  ["CESU surrogate", Buffer.from([0xed, 0xa0, 0x80])],
  ["overlong slash", Buffer.from([0xc0, 0xaf])]
]

export const jsonVariants = (route: Route, context: VariantContext, marked: unknown): Array<Variant> => {
  const sample: unknown = JSON.parse(JSON.stringify(marked))
  const json = (name: string, body: string | Buffer, type: string | null = "application/json") => ({
    name,
    request: make(route, context, { body, type })
  })
  const members = membersOf(marked)
  const strings = members.filter((member) => typeof member.value === "string")
  const objects = members.filter((member) => jsonType(member.value) === "object")
  const label = (member: Member) => member.path.join(".")
  // Hostile text goes into the first string member, else in place of the first member (a wrong
  // type as well), never into a member the route would ignore.
  const firstString = strings[0]?.path ?? members[0]?.path ?? []
  const target = firstString.length === 0 ? "the whole body" : firstString.join(".")
  const huge = "h".repeat(bodyBound - JSON.stringify(sample ?? {}).length - 512)
  return [
    json("malformed JSON: open brace", "{"),
    json("malformed JSON: missing value", '{"a":}'),
    json("malformed JSON: trailing comma", '{"a":1,}'),
    json("malformed JSON: single quotes", "{'a':1}"),
    json("malformed JSON: two documents", "{}{}"),
    json("malformed JSON: trailing garbage", "{} x"),
    json("malformed JSON: bare word", "nul"),
    json("empty body", ""),
    json("raw NUL byte in a string", Buffer.from('{"a":"x\u0000y"}')),
    ...["[]", "null", "42", '"text"', "true"].map((body) => json(`whole body: ${body}`, body)),
    json("no Content-Type", JSON.stringify(sample ?? {}), null),
    json("text/plain", JSON.stringify(sample ?? {}), "text/plain"),
    {
      name: "gzip Content-Encoding (not gzip)",
      request: make(route, context, { headers: { "content-encoding": "gzip" } })
    },
    ...members.flatMap((member) =>
      wrongFor(member).map((value) =>
        json(`${label(member)}: ${JSON.stringify(value)}`, JSON.stringify(replaced(sample, member.path, value)))
      )
    ),
    json(`deep array (${deepLevels} levels) as the body`, deepArray(deepLevels)),
    json(`deep object (${deepLevels} levels) as the body`, deepObject(deepLevels)),
    ...members
      .filter((member) => typeof member.value === "object" && member.value !== null)
      .map((member) =>
        json(
          `${label(member)}: ${deepLevels} levels`,
          JSON.stringify(replaced(sample, member.path, marker)).replace(JSON.stringify(marker), deepObject(deepLevels))
        )
      ),
    ...strings.flatMap((member, index) => [
      json(`${label(member)}: NUL`, JSON.stringify(replaced(sample, member.path, "a\u0000b"))),
      json(
        `${label(member)}: lone surrogate`,
        JSON.stringify(replaced(sample, member.path, index % 2 === 0 ? "a\ud800b" : "a\udc00"))
      ),
      json(
        `${label(member)}: invalid UTF-8 (${invalidUtf8[index % invalidUtf8.length]![0]})`,
        withRawBytes(replaced(sample, member.path, marker), invalidUtf8[index % invalidUtf8.length]![1])
      )
    ]),
    ...invalidUtf8.map(([name, bytes]) =>
      json(`invalid UTF-8 (${name}) in ${target}`, withRawBytes(replaced(sample, firstString, marker), bytes))
    ),
    ...objects
      .filter((member) => Object.keys(member.value as object).length > 0)
      .flatMap((member) => [
        json(
          `${label(member)}: NUL in a key`,
          JSON.stringify(keySpoiled(sample, member.path, (key) => `${key}\u0000`))
        ),
        json(
          `${label(member)}: lone surrogate in a key`,
          JSON.stringify(keySpoiled(sample, member.path, (key) => `${key}\ud800`))
        )
      ]),
    json(`${target}: huge string (just under ${bodyBound} bytes)`, JSON.stringify(replaced(sample, firstString, huge))),
    json("body over the bound", `{"a":"${"h".repeat(bodyBound + 1024)}"}`)
  ]
}

export const formVariants = (route: Route, context: VariantContext): Array<Variant> => {
  const fields = formFields(route, context)
  const names = Object.keys(route.fields ?? {})
  const form = (name: string, body: string | Buffer, type: string | null = "application/x-www-form-urlencoded") => ({
    name,
    request: make(route, context, { body, type })
  })
  /** The form with the raw (already encoded) `value` in place of one field's value. */
  const spoiled = (field: string, value: string | Buffer) => {
    const rest = formText(Object.fromEntries(Object.entries(fields).filter(([name]) => name !== field)))
    return Buffer.concat([Buffer.from(`${rest}${rest === "" ? "" : "&"}${field}=`), Buffer.from(value)])
  }
  const huge = "h".repeat(bodyBound - 4096)
  return [
    ...names.flatMap((field) => [
      form(`${field}: NUL`, spoiled(field, "a%00b")),
      form(`${field}: invalid UTF-8`, spoiled(field, "a%FFb")),
      form(`${field}: encoded lone surrogate`, spoiled(field, "a%ED%A0%80")),
      form(`${field}: malformed percent-encoding`, spoiled(field, "a%G1%")),
      form(`${field}: raw byte FF`, spoiled(field, Buffer.from([0x61, 0xff]))),
      form(`${field}: bidi override`, spoiled(field, "a%E2%80%AEb"))
    ]),
    form("field name: NUL and invalid UTF-8", `${formText(fields)}&a%00%FF=1`),
    form("only ampersands and equals", "&&==&="),
    form(`${names[0] ?? "field"}: huge value (just under ${bodyBound} bytes)`, spoiled(names[0] ?? "field", huge)),
    form("body over the bound", `a=${"h".repeat(bodyBound + 1024)}`),
    form("no Content-Type", formText(fields), null),
    form("multipart without a boundary", formText(fields), "multipart/form-data"),
    ...(route.door === "oauth"
      ? [
          // A repeated field is refused here; the OAuth doors read JSON as well: every field of every
          // wrong type, nesting, malformed text.
          ...names.map((field) => form(`${field}: repeated`, `${formText(fields)}&${field}=again`)),
          ...names.flatMap((field) =>
            wrongValues
              .filter((value) => typeof value !== "string" && value !== null)
              .map((value) =>
                form(
                  `JSON ${field}: ${JSON.stringify(value)}`,
                  JSON.stringify({ ...fields, [field]: value }),
                  "application/json"
                )
              )
          ),
          form("JSON: malformed", '{"client_id":', "application/json"),
          form(`JSON: ${deepLevels} levels`, deepObject(deepLevels), "application/json"),
          form("JSON: NUL", JSON.stringify({ ...fields, [names[0]!]: "a\u0000b" }), "application/json"),
          form("JSON: lone surrogate", JSON.stringify({ ...fields, [names[0]!]: "a\ud800" }), "application/json")
        ]
      : [form("JSON body instead of a form", JSON.stringify(fields), "application/json")])
  ]
}

/** A sample body for a route from its declared JSON schema: each property with a value of its type. */
export const sampleFromSchema = (
  schema: JsonSchema | undefined,
  resolve: (schema: JsonSchema) => JsonSchema
): unknown => {
  const at = resolve(schema ?? {})
  if (at.enum) return at.enum[0]
  const type = Array.isArray(at.type) ? at.type.find((t: string) => t !== "null") : at.type
  if (type === "object" || at.properties) {
    return Object.fromEntries(
      Object.entries<JsonSchema>(at.properties ?? {}).map(([name, property]) => [
        name,
        sampleFromSchema(property, resolve)
      ])
    )
  }
  if (type === "array") return [sampleFromSchema(at.items, resolve)]
  if (type === "integer" || type === "number") return 0
  if (type === "boolean") return false
  if (type === "string") return at.format === "uuid" ? randomUUID() : "hostile"
  const union = at.anyOf ?? at.oneOf
  return union ? sampleFromSchema(union.find((s: JsonSchema) => s.type !== "null") ?? union[0], resolve) : {}
}

/** Hostile multipart bodies at an upload door: each is refused (400, 413 or 415) and stores nothing. */
export const multipartVariants = (route: Route, context: VariantContext): Array<Variant> => {
  const type = `multipart/form-data; boundary=${uploadBoundary}`
  const body = (
    name: string,
    parts: ReadonlyArray<Part>,
    options: { readonly closed?: boolean; readonly type?: string | null } = {}
  ) => ({
    name: `multipart: ${name}`,
    request: make(route, context, {
      body: multipartBody(parts, uploadBoundary, options.closed ?? true),
      type: options.type === undefined ? type : options.type
    })
  })
  const file = (name = "upload[file]"): Part => ({ name, filename: "hostile.txt", data: "hostile" })
  const field = (name: string): Part => ({ name, data: "hostile" })
  return [
    body("no parts", []),
    body("only another file part", [file("other")]),
    body("only a field", [field("comment")]),
    body("upload[file] as a field", [field("upload[file]")]),
    body("two upload[file] parts", [file(), file()]),
    body("a file, then a field of its name", [file(), field("upload[file]")]),
    body("too many parts", [file(), ...Array.from({ length: 70 }, (_, index) => field(`f${index}`))]),
    body("no closing delimiter", [file()], { closed: false }),
    body("no boundary", [file()], { type: "multipart/form-data" }),
    body("another boundary", [file()], { type: "multipart/form-data; boundary=elsewhere" }),
    body("sent as JSON", [file()], { type: "application/json" }),
    body("no Content-Type", [file()], { type: null }),
    {
      name: "multipart: gzip Content-Encoding",
      request: make(route, context, { headers: { "content-encoding": "gzip" } })
    },
    {
      name: "multipart: Content-Length over 110 MiB",
      request: make(route, context, { headers: { "content-length": String(110 * 1024 * 1024 + 1) } })
    }
  ]
}
