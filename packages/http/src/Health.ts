// Liveness and readiness for load balancers and orchestrators: GET /health answers 200 while the
// process serves; GET /ready answers 200 only when the database answers at the migration level
// this server started with (its runtime and supervisors exist once these routes do).
import { Supervision } from "@troupe/actors/Supervision"
import { type DatabaseState, Readiness } from "@troupe/domain/runtime/Readiness"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { envelope } from "./conventions/ErrorEnvelope.ts"
import { notReadyCode, retryAfterSeconds } from "./conventions/Refusal.ts"

export const healthBody = { status: "ok" } as const
export const readyBody = { status: "ready" } as const
export { notReadyCode, retryAfterSeconds } from "./conventions/Refusal.ts"

const behind = "The database lacks migrations this server needs; run troupe migrate"
const noStore = { "cache-control": "no-store" }

const notReady = (message: string) =>
  envelope(503, notReadyCode, message, { ...noStore, "retry-after": String(retryAfterSeconds) })

const HealthRoute = HttpRouter.add(
  "GET",
  "/health",
  Effect.succeed(HttpServerResponse.jsonUnsafe(healthBody, { headers: noStore }))
)

const ReadyRoute = Layer.unwrap(
  Effect.gen(function* () {
    yield* Supervision
    const readiness = yield* Readiness
    const answer = (state: DatabaseState) =>
      state === "ready"
        ? HttpServerResponse.jsonUnsafe(readyBody, { headers: noStore })
        : notReady(state === "behind" ? behind : "The database does not answer")
    return HttpRouter.add("GET", "/ready", Effect.map(readiness.database, answer))
  })
)

export const HealthRoutes = Layer.mergeAll(HealthRoute, ReadyRoute)
