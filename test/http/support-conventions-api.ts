// A test-only HttpApi that exercises the shared conventions (decode failures, defects,
// pagination, lock_version, Idempotency-Key, Retry-After, concealment) through the real server
// and the real middleware. Mounted with startTestServer({ extraRoutes: ConventionsTestRoutes }).
import {
  BadRequest,
  Conflict,
  errors,
  NotFound,
  RateLimitedResponse,
  Unauthorized,
  Unprocessable
} from "@troupe/contracts/Errors"
import { type CallerIdentity, Idempotent } from "@troupe/contracts/Idempotency"
import { LockVersion } from "@troupe/contracts/LockVersion"
import { PageQuery, Pagination } from "@troupe/contracts/Pagination"
import { CurrentPlatformCaller, PlatformAuthentication } from "@troupe/contracts/platform/Caller"
import { visibleOrNotFound } from "@troupe/http/conventions/Concealment"
import { type Key, pageOf, parsePage } from "@troupe/http/conventions/Pagination"
import { ApiMiddleware } from "@troupe/http/Routes"
import { Effect, Layer, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "effect/http-api"

/** A string the defect endpoint puts in its error message; it must never reach a client. */
export const defectSecret = "XYZ-do-not-leak"

const numberKey = (key: Key): key is readonly [number] => key.length === 1 && typeof key[0] === "number"

/** The fixed list the pagination endpoint pages through: ids 1..60. */
export const listedIds: ReadonlyArray<number> = Array.from({ length: 60 }, (_, index) => index + 1)

/** How many times the idempotent create handler really ran, per widget name. */
export const widgetRuns = new Map<string, number>()

/** Things for the concealment endpoint: id → the email of the only user who may see it. */
export const things: ReadonlyMap<number, string> = new Map([
  [1, "owner@example.com"],
  [2, "member@example.com"]
])

const Widget = Schema.Struct({ id: Schema.Number, name: Schema.String })

export class ConventionsTestApi extends HttpApi.make("conventions-test").add(
  HttpApiGroup.make("t").add(
    HttpApiEndpoint.get("echoParams", "/test/echo/:id", {
      params: { id: Schema.Int },
      query: { n: Schema.optional(Schema.Int) },
      success: Schema.Struct({ id: Schema.Number, n: Schema.optional(Schema.Number) })
    }),
    HttpApiEndpoint.post("echoBody", "/test/echo", {
      payload: Schema.Struct({ name: Schema.String, count: Schema.Int }),
      success: Schema.Struct({ name: Schema.String, count: Schema.Number })
    }),
    HttpApiEndpoint.get("boom", "/test/boom", {
      success: Schema.Struct({ ok: Schema.Boolean })
    }),
    HttpApiEndpoint.get("list", "/test/list", {
      query: PageQuery,
      success: Schema.Struct({ items: Schema.Array(Schema.Struct({ id: Schema.Number })), pagination: Pagination }),
      error: BadRequest
    }),
    HttpApiEndpoint.post("lock", "/test/lock", {
      query: { current: Schema.Int },
      payload: Schema.Struct({ lock_version: LockVersion }),
      success: Schema.Struct({ lock_version: Schema.Number }),
      error: [BadRequest, Conflict]
    }),
    // Idempotent needs the CallerIdentity that PlatformAuthentication provides. Middleware
    // added later wraps the earlier ones, so PlatformAuthentication goes last (outermost);
    // the types refuse the other order (CallerIdentity would stay required).
    HttpApiEndpoint.post("createWidget", "/test/widgets", {
      payload: Schema.Struct({ name: Schema.String, refuse: Schema.optional(Schema.Boolean) }),
      success: Schema.Struct({ widget: Widget, run: Schema.Number }).pipe(HttpApiSchema.status(201)),
      error: [BadRequest, Unprocessable]
    })
      .middleware(Idempotent)
      .middleware(PlatformAuthentication),
    HttpApiEndpoint.get("limited", "/test/limited", {
      success: Schema.Struct({ ok: Schema.Boolean }),
      error: RateLimitedResponse
    }),
    HttpApiEndpoint.get("thing", "/test/things/:id", {
      params: { id: Schema.Int },
      success: Schema.Struct({ thing: Schema.Struct({ id: Schema.Number }) }),
      error: [NotFound, Unauthorized]
    }).middleware(PlatformAuthentication)
  )
) {}

let nextWidgetId = 1

const ConventionsTestHandlers = HttpApiBuilder.group(ConventionsTestApi, "t", (handlers) =>
  handlers
    .handle("echoParams", ({ params, query }) =>
      Effect.succeed(query.n === undefined ? { id: params.id } : { id: params.id, n: query.n })
    )
    .handle("echoBody", ({ payload }) => Effect.succeed({ name: payload.name, count: payload.count }))
    .handle("boom", () => Effect.die(new Error(`database refused the connection with password ${defectSecret}`)))
    .handle("list", ({ query }) =>
      Effect.gen(function* () {
        const page = yield* parsePage(query, numberKey)
        const after = page.after?.[0]
        const ordered = page.order === "asc" ? listedIds : [...listedIds].reverse()
        const rows = ordered
          .filter((id) => after === undefined || (page.order === "asc" ? id > after : id < after))
          .slice(0, page.limit + 1)
          .map((id) => ({ id }))
        return pageOf(rows, page, (row) => [row.id])
      })
    )
    .handle("lock", ({ query, payload }) =>
      Effect.gen(function* () {
        if (payload.lock_version !== query.current) {
          return yield* errors.conflict(
            "stale_object",
            "The resource changed since you read it; read it again and retry"
          )
        }
        return { lock_version: payload.lock_version }
      })
    )
    .handle("createWidget", ({ payload }) =>
      Effect.gen(function* () {
        const run = (widgetRuns.get(payload.name) ?? 0) + 1
        widgetRuns.set(payload.name, run)
        // Keep the first request busy for a moment so duplicates sent together really overlap.
        yield* Effect.sleep("30 millis")
        if (payload.refuse === true) {
          return yield* errors.unprocessable("widget_refused", "This widget was refused")
        }
        return { widget: { id: nextWidgetId++, name: payload.name }, run }
      })
    )
    .handle("limited", () => Effect.fail(errors.rateLimited(7)))
    .handle("thing", ({ params }) =>
      Effect.gen(function* () {
        const caller = yield* CurrentPlatformCaller
        const owner = things.get(params.id)
        const thing = yield* visibleOrNotFound(
          owner === undefined ? undefined : { id: params.id, owner },
          (found) => found.owner === caller.user.email
        )
        return { thing: { id: thing.id } }
      })
    )
)

export const ConventionsTestRoutes = HttpApiBuilder.layer(ConventionsTestApi).pipe(
  Layer.provide(ConventionsTestHandlers.pipe(Layer.provide(ApiMiddleware)))
)

// Compile-time guard: startTestServer accepts any requirements, so make sure the middleware
// order above leaves no CallerIdentity unprovided (it would only fail at request time).
type Requirements<L> = L extends Layer.Layer<infer _A, infer _E, infer R> ? R : never
export const callerIdentityProvided: CallerIdentity extends Requirements<typeof ConventionsTestRoutes> ? never : true =
  true
