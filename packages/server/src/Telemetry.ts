// The OTLP exporter: with OTEL_EXPORTER_OTLP_ENDPOINT set, every span (requests, steps, jobs, SQL)
// of the traces the sampler keeps and every log line is exported over OTLP/HTTP by Effect's own
// exporters; unset, nothing is.
// A request's span records its id (http.response.header.x-request-id), as its log lines do, and
// no query value (as the request's log line shows no query string).
// A collector that cannot be reached, or refuses, is said once in the log (Effect's exporter only
// drops the batch and pauses a minute, silently), and once again when it answers.
import { Effect, Layer, Redacted, Tracer } from "effect"
import { FetchHttpClient, HttpClient, type HttpClientError, HttpMiddleware, UrlParams } from "effect/http"
import { OtlpExporter, OtlpLogger, OtlpSerialization, OtlpTracer } from "effect/observability"
import type { TelemetryConfig } from "./Config.ts"
import { sampledTracer } from "./Sampling.ts"

/** Of all headers, request spans record only the request id the answer carries. */
const requestIdOnly = Layer.succeed(
  HttpMiddleware.TracerHeaderFilter,
  (name, phase) => phase === "response" && name === "x-request-id"
)

/** Every query parameter's value is REDACTED in spans (a query may carry a user code or a state). */
const noQueryValues = Layer.succeed(UrlParams.CurrentRedactedNames, [/^/])

/** The system code (ECONNREFUSED, ENOTFOUND …) along a transport failure's causes, else its message. */
const reasonOf = (error: HttpClientError.HttpClientError) => {
  for (
    let cause: unknown = error.reason.cause, depth = 0;
    typeof cause === "object" && cause !== null && depth < 8;
    depth++
  ) {
    const link = cause as { readonly code?: unknown; readonly cause?: unknown }
    if (typeof link.code === "string") return link.code
    cause = link.cause
  }
  return error.message
}

/** The exporters' HTTP client, saying in the log when the collector stops and starts answering. */
const reportingClient = (endpointUrl: URL) => {
  // Never its userinfo or query, which may carry a credential.
  const endpoint = `${endpointUrl.origin}${endpointUrl.pathname.replace(/\/$/, "")}`
  return Layer.effect(
    HttpClient.HttpClient,
    Effect.map(HttpClient.HttpClient, (client) => {
      let failing = false
      const failed = (reason: string) => {
        if (failing) return Effect.void
        failing = true
        return Effect.logWarning(
          `OpenTelemetry export to ${endpoint} failed (${reason}); spans and logs are dropped until it answers`
        )
      }
      return client.pipe(
        HttpClient.tap((response) => {
          if (response.status >= 300) return failed(`it answered ${response.status}`)
          if (!failing) return Effect.void
          failing = false
          return Effect.logInfo(`OpenTelemetry export to ${endpoint} answers again`)
        }),
        HttpClient.tapError((error) => failed(reasonOf(error)))
      )
    })
  ).pipe(Layer.provide(FetchHttpClient.layer))
}

/** The tracer and a second logger (beside the console's) for `telemetry`; without it, neither. */
export const telemetryLayer = (telemetry: TelemetryConfig | undefined): Layer.Layer<OtlpExporter.Flusher> => {
  if (telemetry === undefined) return OtlpExporter.layerFlusher
  const signal = (name: "traces" | "logs") => {
    const url = new URL(telemetry.endpoint)
    url.pathname = `${url.pathname.replace(/\/$/, "")}/v1/${name}`
    return url.href
  }
  const common = { resource: { serviceName: telemetry.serviceName }, headers: Redacted.value(telemetry.headers) }
  return Layer.mergeAll(
    Layer.effect(
      Tracer.Tracer,
      Effect.map(OtlpTracer.make({ ...common, url: signal("traces") }), (tracer) =>
        sampledTracer(telemetry.sampler, tracer)
      )
    ).pipe(Layer.provideMerge(OtlpExporter.layerFlusher)),
    OtlpLogger.layer({ ...common, url: signal("logs"), mergeWithExisting: true }),
    requestIdOnly,
    noQueryValues
  ).pipe(
    Layer.provide(telemetry.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(reportingClient(telemetry.endpoint))
  )
}
