// Which traces the OTLP exporter keeps: OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG read as
// the OpenTelemetry SDKs read them, and the tracer that applies the choice to every new span.
import { Config, Effect, Option, Tracer } from "effect"
import { ConfigurationError } from "./ConfigurationError.ts"

const names = [
  "always_on",
  "always_off",
  "traceidratio",
  "parentbased_always_on",
  "parentbased_always_off",
  "parentbased_traceidratio"
] as const

export interface Sampler {
  /** An OTEL_TRACES_SAMPLER value; `parentbased_always_on` when unset, as in the SDKs. */
  readonly name: (typeof names)[number]
  /** The share of traces kept by `traceidratio` (OTEL_TRACES_SAMPLER_ARG, default 1), from 0 to 1. */
  readonly ratio: number
}

const variableText = (name: string) =>
  Config.String(name).pipe(
    Config.withDefault(""),
    Config.map((text) => text.trim())
  )

/** The sampler variables (values are case-insensitive; the argument is read only by the ratio samplers). */
export const loadSampler = Effect.gen(function* () {
  const text = yield* variableText("OTEL_TRACES_SAMPLER")
  const name = names.find((candidate) => candidate === (text.toLowerCase() || "parentbased_always_on"))
  if (name === undefined) {
    return yield* new ConfigurationError({
      variable: "OTEL_TRACES_SAMPLER",
      message: `OTEL_TRACES_SAMPLER=${text} is not a sampler Troupe offers; set it to parentbased_always_on (the default), parentbased_always_off, parentbased_traceidratio, always_on, always_off or traceidratio`
    })
  }
  if (!name.endsWith("traceidratio")) return { name, ratio: 1 } satisfies Sampler
  const arg = yield* variableText("OTEL_TRACES_SAMPLER_ARG")
  const ratio = arg === "" ? 1 : Number(arg)
  if (!/^[0-9.eE+-]*$/.test(arg) || !(ratio >= 0 && ratio <= 1)) {
    return yield* new ConfigurationError({
      variable: "OTEL_TRACES_SAMPLER_ARG",
      message: `OTEL_TRACES_SAMPLER_ARG=${arg} is not a ratio for ${name}; set it to the share of traces to keep, a number from 0 to 1 such as 0.25`
    })
  }
  return { name, ratio } satisfies Sampler
})

/**
 * Whether `traceidratio` keeps a trace: its id's last 52 bits (random in W3C trace ids) read as
 * a fraction below the ratio, so every span of a trace gets the same answer.
 */
export const keepsTrace = (ratio: number, traceId: string) =>
  Number.parseInt(traceId.padStart(32, "0").slice(-13), 16) < ratio * 2 ** 52

/**
 * `tracer` deciding each new span's sampling by `sampler`: a `parentbased_*` sampler follows the
 * parent's decision (local or from an incoming `traceparent`) and applies its root sampler only to
 * spans without one. An unsampled span is never exported, nor, by default, are its descendants.
 */
export const sampledTracer = (sampler: Sampler, tracer: Tracer.Tracer): Tracer.Tracer => {
  const parentBased = sampler.name.startsWith("parentbased_")
  const root = sampler.name.replace("parentbased_", "")
  return Tracer.make({
    span(options) {
      const parent = Option.getOrUndefined(options.parent)
      if (parentBased && parent !== undefined) return tracer.span(options)
      if (root !== "traceidratio") return tracer.span({ ...options, sampled: root === "always_on" })
      if (parent !== undefined) return tracer.span({ ...options, sampled: keepsTrace(sampler.ratio, parent.traceId) })
      const span = tracer.span({ ...options, sampled: true })
      if (keepsTrace(sampler.ratio, span.traceId)) return span
      // Dropped: the same trace id (so what it calls, and its outgoing traceparent, agree), unsampled.
      const unsampled = Tracer.externalSpan({ traceId: span.traceId, spanId: span.spanId, sampled: false })
      return tracer.span({ ...options, parent: Option.some(unsampled), sampled: false })
    },
    context: tracer.context
  })
}
