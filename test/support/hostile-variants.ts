// Hostile requests for one route: wrong and missing credentials, bad path ids, bad query values
// (cursors, limits), the bodies of hostile-bodies.ts, WebSocket handshakes, and requests only
// Node's HTTP parser sees.
import { randomUUID } from "node:crypto"
import { formVariants, jsonVariants, multipartVariants } from "./hostile-bodies.ts"
import { baseline, fill, make, type Variant, type VariantContext } from "./hostile-requests.ts"
import { optionalBodies, type Route } from "./hostile-routes.ts"

const credentialVariants = (route: Route, context: VariantContext): Array<Variant> => {
  // The cable refuses a credential inside the Action Cable protocol, after the upgrade (test/http/cable).
  if (route.plane === "none" || route.websocket) return []
  const strip = ["authorization", "cookie"]
  const instead = (name: string, headers: Record<string, string>) => ({
    name: `credential: ${name}`,
    request: make(route, context, { dropHeaders: strip, headers })
  })
  return [
    instead("missing", {}),
    instead("Bearer without a token", { authorization: "Bearer" }),
    instead("Basic scheme", { authorization: "Basic aG9zdGlsZTpob3N0aWxl" }),
    instead("unknown bearer", { authorization: `Bearer sk-svc-api-v1-${"x".repeat(40)}` }),
    instead("two bearers", { authorization: "Bearer a, Bearer b" }),
    instead("garbage cookie", { cookie: "troupe_session=%00%FF; x=\u00ff" }),
    ...context.foreign(route).map((credential) => instead(credential.name, { ...credential.headers }))
  ]
}

/** Bad values for a path parameter; the UUID-shaped ones only for ids (a name may be "not-a-uuid"). */
const badIds: ReadonlyArray<readonly [string, string]> = [
  ["not a UUID", "not-a-uuid"],
  ["UUID with braces", `{${randomUUID()}}`],
  ["upper-case UUID", randomUUID().toUpperCase()],
  ["overlong (2 KB)", `${randomUUID()}${"0".repeat(2000)}`],
  ["over the 16 KB head bound", "a".repeat(20_000)],
  ["NUL", "%00"],
  ["invalid UTF-8", "%FF%FE"],
  ["encoded lone surrogate", "%ED%A0%80"],
  ["bidi override", "%E2%80%AE"],
  ["dot segments", "..%2F..%2Fetc"],
  ["empty", ""]
]

const pathVariants = (route: Route, context: VariantContext): Array<Variant> =>
  route.params.flatMap((param) =>
    badIds
      .filter(([label]) => /id$/.test(param) || !label.includes("UUID"))
      // An empty last segment is the collection's own path with a trailing slash.
      .filter(([label]) => label !== "empty" || !route.path.endsWith(`{${param}}`))
      .map(([label, value]) => ({
        name: `path ${param}: ${label}`,
        request: make(route, context, {
          path: fill(route, (name) => (name === param ? value : encodeURIComponent(context.param(route, name))))
        })
      }))
  )

const badQueryValues: ReadonlyArray<readonly [string, string]> = [
  ["word", "sideways"],
  ["negative", "-1"],
  ["zero", "0"],
  ["fraction", "1.5"],
  ["exponent", "1e309"],
  ["huge number", "99999999999999999999999"],
  ["NUL", "%00"],
  ["invalid UTF-8", "%FF"],
  ["encoded lone surrogate", "%ED%A0%80"],
  ["malformed percent-encoding", "%G1%"],
  ["garbage cursor", Buffer.from('{"id":"not a cursor"').toString("base64url")],
  ["JSON cursor of the wrong shape", Buffer.from('{"x":[1,{"y":null}]}').toString("base64url")],
  ["overlong (8 KB)", "A".repeat(8192)]
]

/** Query parameters for which 0 is a well-formed value. */
const zeroTaken: ReadonlySet<string> = new Set([
  "lock_version",
  "archived",
  "side",
  "include_hidden",
  "after_position",
  "before_position"
])

const queryVariants = (route: Route, context: VariantContext): Array<Variant> =>
  route.query.flatMap((param) => [
    // 0 is the current lock_version of the test's resources, a boolean's false, the position before the first turn.
    ...badQueryValues
      .filter(([label]) => label !== "zero" || !zeroTaken.has(param))
      .map(([label, value]) => ({
        name: `query ${param}: ${label}`,
        request: make(route, context, { query: `${param}=${value}` })
      })),
    { name: `query ${param}: repeated`, request: make(route, context, { query: `${param}=1&${param}=2` }) }
  ])

const websocketVariants = (route: Route, context: VariantContext): Array<Variant> => {
  const upgrade = (name: string, headers: Record<string, string>, drop: ReadonlyArray<string> = []) => ({
    name: `websocket: ${name}`,
    request: make(route, context, { headers, dropHeaders: drop })
  })
  return [
    upgrade("no upgrade asked", {}, ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version"]),
    upgrade("Sec-WebSocket-Key not base64", { "sec-websocket-key": "not base64!!" }),
    upgrade("Sec-WebSocket-Key of 20 bytes", { "sec-websocket-key": Buffer.alloc(20, 1).toString("base64") }),
    upgrade("no Sec-WebSocket-Key", {}, ["sec-websocket-key"]),
    upgrade("Sec-WebSocket-Version 8", { "sec-websocket-version": "8" })
  ]
}

/** Requests Node's HTTP parser answers before any route sees them. */
const parserVariants = (route: Route, context: VariantContext): Array<Variant> => {
  const base = baseline(route, context)
  return [
    { name: "parser: unknown method", request: make(route, context, { method: "BREW" }) },
    {
      name: "parser: header over 16 KB",
      request: make(route, context, { headers: { "x-filler": "f".repeat(20_000) } })
    },
    { name: "parser: raw byte FF in the path", request: make(route, context, { path: `${base.path}\u00ff` }) },
    ...(route.body
      ? [
          {
            name: "parser: body longer than Content-Length",
            request: make(route, context, {
              body: "{",
              headers: { connection: "keep-alive" },
              trailing: Buffer.from("}garbage\r\n\r\n")
            })
          }
        ]
      : [])
  ]
}

/** Every hostile variant of a route. */
export const variantsOf = (route: Route, context: VariantContext): Array<Variant> => {
  const sample = route.body === "json" ? (context.sample(route) ?? {}) : undefined
  const bodiless = optionalBodies.has(`${route.method} ${route.path}`)
  return [
    ...credentialVariants(route, context),
    ...pathVariants(route, context),
    ...queryVariants(route, context),
    // A create whose body may be left out accepts an empty or null body: not hostile there.
    ...(route.body === "json"
      ? jsonVariants(route, context, sample).filter(
          (variant) => !bodiless || (variant.name !== "empty body" && variant.name !== "whole body: null")
        )
      : []),
    ...(route.body === "form" ? formVariants(route, context) : []),
    ...(route.body === "multipart" ? multipartVariants(route, context) : []),
    ...(route.websocket ? websocketVariants(route, context) : []),
    ...parserVariants(route, context)
  ]
}
