// The sampler of the OTLP exporter: each OTEL_TRACES_SAMPLER decides a new span's sampling as the
// OpenTelemetry SDKs do (parent-based ones follow the parent, a remote one included;
// traceidratio decides on the trace id, so a trace's spans agree), and only the spans of kept
// traces reach the collector.
import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { keepsTrace, type Sampler, sampledTracer } from "@troupe/server/Sampling"
import { telemetryLayer } from "@troupe/server/Telemetry"
import { Effect, Redacted, Tracer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

/** The root span and its child, as `sampler` decides them under `parent` (if any). */
const trace = (name: Sampler["name"], ratio = 1, parent?: Tracer.ExternalSpan) => {
  const spans = Effect.all([Effect.currentSpan, Effect.currentSpan.pipe(Effect.withSpan("child"))]).pipe(
    Effect.withSpan("root", parent === undefined ? {} : { parent })
  )
  return Effect.runSync(
    Effect.provideService(spans, Tracer.Tracer, sampledTracer({ name, ratio }, Tracer.nativeTracer))
  )
}
const remote = (sampled: boolean) =>
  Tracer.externalSpan({ traceId: "4bf92f3577b34da6a3ce929d0e0e4736", spanId: "00f067aa0ba902b7", sampled })
const decisions = (spans: ReadonlyArray<Tracer.Span>) => spans.map((span) => span.sampled)

describe("sampledTracer", () => {
  it("always_on and always_off decide every span, whatever the parent says", () => {
    expect(decisions(trace("always_on"))).toEqual([true, true])
    expect(decisions(trace("always_on", 1, remote(false)))).toEqual([true, true])
    expect(decisions(trace("always_off"))).toEqual([false, false])
    expect(decisions(trace("always_off", 1, remote(true)))).toEqual([false, false])
  })

  it("a parentbased sampler follows the parent, and applies its root sampler only without one", () => {
    expect(decisions(trace("parentbased_always_on"))).toEqual([true, true])
    expect(decisions(trace("parentbased_always_on", 1, remote(false)))).toEqual([false, false])
    expect(decisions(trace("parentbased_always_off"))).toEqual([false, false])
    expect(decisions(trace("parentbased_always_off", 1, remote(true)))).toEqual([true, true])
    expect(decisions(trace("parentbased_traceidratio", 0, remote(true)))).toEqual([true, true])
  })

  it("traceidratio keeps about its share of traces, deciding on the trace id so a trace's spans agree", () => {
    let kept = 0
    for (let index = 0; index < 400; index++) {
      const [root, child] = trace("traceidratio", 0.5)
      expect(child.traceId).toBe(root.traceId)
      expect(child.sampled).toBe(root.sampled)
      expect(root.sampled).toBe(keepsTrace(0.5, root.traceId))
      if (root.sampled) kept++
    }
    expect(kept).toBeGreaterThan(120)
    expect(kept).toBeLessThan(280)
    expect(decisions(trace("traceidratio", 1))).toEqual([true, true])
    expect(decisions(trace("traceidratio", 0))).toEqual([false, false])
    expect(decisions(trace("parentbased_traceidratio", 0))).toEqual([false, false])
  })

  it("reads the trace id's last 52 bits as the fraction compared with the ratio", () => {
    expect(keepsTrace(0.001, "4bf92f3577b34da6a3c0000000000000")).toBe(true)
    expect(keepsTrace(0.999, "4bf92f3577b34da6a3cfffffffffffff")).toBe(false)
    expect(keepsTrace(0.5, "00000000000000000007ffffffffffff")).toBe(true)
    expect(keepsTrace(0.5, "00000000000000000008000000000000")).toBe(false)
  })
})

describe("the OTLP exporter with a sampler", () => {
  const received: Array<string> = []
  let collector: Server

  beforeAll(async () => {
    collector = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        if (req.url === "/v1/traces") received.push(Buffer.concat(chunks).toString())
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    await new Promise<void>((done) => collector.listen(0, "127.0.0.1", done))
  })
  afterAll(() => new Promise((done) => collector?.close(done)))

  it("exports the spans of kept traces only", async () => {
    const layer = telemetryLayer({
      endpoint: new URL(`http://127.0.0.1:${(collector.address() as AddressInfo).port}`),
      protocol: "http/json",
      serviceName: "troupe-sampled",
      headers: Redacted.make({}),
      sampler: { name: "parentbased_always_off", ratio: 1 }
    })
    await Effect.runPromise(
      Effect.all([
        Effect.void.pipe(Effect.withSpan("dropped root")),
        Effect.void.pipe(Effect.withSpan("kept child of a sampled caller", { parent: remote(true) }))
      ]).pipe(Effect.provide(layer))
    )
    const exported = received.join("\n")
    expect(exported).toContain("kept child of a sampled caller")
    expect(exported).not.toContain("dropped root")
  })
})
