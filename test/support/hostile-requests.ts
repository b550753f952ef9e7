// How a hostile request is put together: the context of real credentials, ids, samples and CSRF
// token a route's requests carry, and `make`, which builds one from the route's well-formed
// baseline with only the parts under test replaced.
import { randomUUID } from "node:crypto"
import type { Route } from "./hostile-routes.ts"
import type { RawRequest } from "./raw-http.ts"
import { multipartBody } from "./uploads.ts"

export interface Variant {
  readonly name: string
  readonly request: RawRequest
}

export interface Credential {
  readonly name: string
  readonly headers: Readonly<Record<string, string>>
}

export interface VariantContext {
  /** The headers of a credential the route accepts (empty for a route that takes none). */
  readonly own: (route: Route) => Readonly<Record<string, string>>
  /** Real credentials that must not open the route. */
  readonly foreign: (route: Route) => ReadonlyArray<Credential>
  /** A real value for a path parameter, so only the variant under test is wrong. */
  readonly param: (route: Route, name: string) => string
  /** A well-formed JSON body for the route, or undefined. */
  readonly sample: (route: Route) => unknown
  readonly csrf: string
}

/** The server's request body bound (Server.ts maxBodySize). */
export const bodyBound = 4 * 1024 * 1024
export const deepLevels = 5000

let counter = 0
/** A fresh client address per request (the test server trusts X-Forwarded-For), so per-IP budgets never run out. */
const freshAddress = () => {
  const n = counter++
  return `198.18.${(n >> 8) & 255}.${n & 255}`
}

const websocketHeaders = {
  upgrade: "websocket",
  connection: "Upgrade",
  "sec-websocket-version": "13",
  "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ=="
}

export const fill = (route: Route, values: (name: string) => string) =>
  route.path.replace(/\{(\w+)\}/g, (_, name: string) => values(name))

/** The request a route would take, before one part of it is spoiled. */
export const baseline = (route: Route, context: VariantContext) => {
  const headers: Record<string, string> = { "x-forwarded-for": freshAddress(), ...context.own(route) }
  if (route.websocket) Object.assign(headers, websocketHeaders)
  if (route.csrf === "header") headers["x-csrf-token"] = context.csrf
  if (route.door === "api" && ["POST", "PUT", "PATCH"].includes(route.method)) {
    headers["idempotency-key"] = `hostile-${randomUUID()}`
  }
  const path = fill(route, (name) => encodeURIComponent(context.param(route, name)))
  return { headers, path }
}

export const formText = (fields: Record<string, string>) => new URLSearchParams(fields).toString()

export const formFields = (route: Route, context: VariantContext): Record<string, string> => ({
  ...route.fields,
  ...(route.csrf === "form" ? { csrf_token: context.csrf } : {})
})

/** The boundary of the upload doors' well-formed multipart body. */
export const uploadBoundary = "hostile-upload-boundary"

/** The well-formed body of a route with its content type, or none. */
const baseBody = (route: Route, context: VariantContext): { type: string; body: string | Buffer } | undefined => {
  if (route.body === "multipart") {
    return {
      type: `multipart/form-data; boundary=${uploadBoundary}`,
      body: multipartBody([{ name: "upload[file]", filename: "hostile.txt", data: "hostile" }], uploadBoundary)
    }
  }
  if (route.body === "form")
    return { type: "application/x-www-form-urlencoded", body: formText(formFields(route, context)) }
  if (route.body === "json") return { type: "application/json", body: JSON.stringify(context.sample(route) ?? {}) }
  return undefined
}

/** Builds a request from the route's baseline with some parts replaced. */
export const make = (
  route: Route,
  context: VariantContext,
  change: {
    path?: string
    query?: string
    headers?: Record<string, string>
    dropHeaders?: ReadonlyArray<string>
    body?: string | Buffer
    type?: string | null
    method?: string
    trailing?: Buffer
  } = {}
): RawRequest => {
  const base = baseline(route, context)
  const fallback = baseBody(route, context)
  const headers: Record<string, string> = { ...base.headers, ...change.headers }
  for (const name of change.dropHeaders ?? []) delete headers[name]
  const body = change.body ?? fallback?.body
  const type = change.type === undefined ? fallback?.type : change.type
  if (body !== undefined && type !== null && type !== undefined) headers["content-type"] = type
  const target = `${change.path ?? base.path}${change.query === undefined ? "" : `?${change.query}`}`
  return {
    method: change.method ?? route.method,
    target,
    headers,
    ...(body === undefined ? {} : { body }),
    ...(change.trailing ? { trailing: change.trailing } : {}),
    ...(route.websocket ? { oneAnswer: true } : {})
  }
}
