// The deployment progress stream, GET /api/v1/admin/deployment/upgrades/{id}/stream (spec
// "Deployment progress stream (SSE)"): a plain route, outside the HttpApi. Each connection
// observes the upgrade's log at most ten times, one second apart, as deployment.progress.v1
// events (id = next_cursor), ending early after a terminal status; a fault, or the caller's
// authority lapsing between observations, sends one deployment.error.v1 and closes. The query's
// cursor takes precedence over Last-Event-ID. The first observation is made before the stream
// opens, so its refusals (an unknown upgrade, a bad cursor, no updater) are envelopes.
// Each stream opens with `retry: 1000`, so a client reconnects at the observations' own pace.
// A stop of the server ends the stream at once (the client reconnects to whichever server answers).
import { statusOfCode } from "@troupe/contracts/Errors"
import { isPublicId } from "@troupe/contracts/PublicId"
import { UpgradeLog } from "@troupe/contracts/platform/Deployment"
import { Deployment } from "@troupe/domain/deployment/Deployment"
import { Duration, Effect, Layer, Option, Schema, Stream } from "effect"
import { Sse } from "effect/encoding"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelope } from "../conventions/ErrorEnvelope.ts"
import { Stopping } from "../Stopping.ts"
import { platformCallerOfRequest, platformRefusal } from "./Authentication.ts"
import { answerDeployment, deploymentRefusalOf } from "./Deployment.ts"

export const progressEvent = "deployment.progress.v1"
export const errorEvent = "deployment.error.v1"
/** Observations per connection and the spacing between them (spec "Limits", Deployment). */
export const observations = 10
export const spacing = Duration.seconds(1)

type Envelope = { readonly error: { readonly code: string; readonly message: string } }

const refusal = (status: number, error: Envelope) => envelope(status, error.error.code, error.error.message)

const statusOf = (error: Envelope) => (statusOfCode as Record<string, number>)[error.error.code] ?? 400

const encodeLog = Schema.encodeSync(UpgradeLog)

const event = (name: string, data: unknown, id?: string): Sse.Event => ({
  _tag: "Event",
  event: name,
  id,
  data: JSON.stringify(data)
})

const terminal = (log: UpgradeLog) => log.operation.status !== "running"

/** The observations made so far on this connection, and the cursor the next one reads after. */
interface Observation {
  readonly count: number
  readonly cursor: string
}

export const DeploymentStreamRoute = Layer.unwrap(
  Effect.gen(function* () {
    const deployment = yield* Deployment
    const callerOf = yield* platformCallerOfRequest
    const stopping = yield* Stopping
    /** The caller's current standing: undefined while a live owner or admin, else the refusal. */
    const standing = (request: HttpServerRequest.HttpServerRequest) =>
      callerOf(request).pipe(
        Effect.map((caller) => {
          const refused = deploymentRefusalOf(caller)
          return refused === undefined ? undefined : ({ status: 403, error: refused.error } as const)
        }),
        Effect.catch((refused) => Effect.succeed({ status: 401, error: refused.error } as const))
      )
    return HttpRouter.add(
      "GET",
      "/api/v1/admin/deployment/upgrades/:id/stream",
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const refused = yield* standing(request)
        if (refused !== undefined) {
          return refused.status === 401 ? platformRefusal(request, refused) : refusal(refused.status, refused)
        }
        const { id = "" } = yield* HttpRouter.params
        const cursors = new URL(request.url, "http://troupe.invalid").searchParams.getAll("cursor")
        if (cursors.length > 1) return envelope(400, "parameter_invalid", "Send one cursor")
        if (!isPublicId(id)) return envelope(404, "not_found", "Not found")
        const start = cursors[0] ?? request.headers["last-event-id"] ?? null
        const first = yield* Effect.result(answerDeployment(deployment.log(id, start)))
        if (first._tag === "Failure") return refusal(statusOf(first.failure), first.failure)
        const progress = (log: UpgradeLog) => event(progressEvent, encodeLog(log), log.next_cursor)
        /** The next observation after `count` of them, unless the window is spent or the upgrade over. */
        const after = (count: number, log: UpgradeLog) =>
          count < observations && !terminal(log)
            ? Option.some<Observation>({ count, cursor: log.next_cursor })
            : Option.none<Observation>()
        const fault = (error: Envelope["error"]) =>
          [[event(errorEvent, { code: error.code, message: error.message, operation_id: id })], Option.none()] as const
        const observe = ({ count, cursor }: Observation) =>
          Effect.gen(function* () {
            yield* Effect.sleep(spacing)
            const lapsed = yield* standing(request)
            if (lapsed !== undefined) return fault(lapsed.error)
            const window = yield* Effect.result(answerDeployment(deployment.log(id, cursor)))
            if (window._tag === "Failure") return fault(window.failure.error)
            return [[progress(window.success)], after(count + 1, window.success)] as const
          })
        const observed = Stream.concat(
          Stream.make<Array<Sse.AnyEvent>>(
            new Sse.Retry({ duration: spacing, lastEventId: undefined }),
            progress(first.success)
          ),
          Option.match(after(1, first.success), {
            onNone: () => Stream.empty,
            onSome: (next) => Stream.paginate<Observation, Sse.AnyEvent>(next, observe)
          })
        )
        const events = Stream.interruptWhen(observed, stopping.begun)
        return HttpServerResponse.stream(Stream.encodeText(Stream.map(events, (item) => Sse.encoder.write(item))), {
          contentType: "text/event-stream",
          headers: { "cache-control": "no-store" }
        })
      })
    )
  })
)
