// The deployment configuration: every variable of the README's Configuration table refuses a
// bad value with one ConfigurationError naming it and the fix (the CLI prints its message as
// one line; test/e2e/configuration.test.ts checks that end to end), and TROUPE_TRUSTED_PROXIES
// takes bare addresses as single-host networks.
import { resolve } from "node:path"
import { loadServerConfig } from "@troupe/server/Config"
import { ConfigProvider, Effect, Exit, Redacted } from "effect"
import { describe, expect, it } from "vitest"

const load = (env: Record<string, string>) =>
  Effect.runPromiseExit(
    Effect.provideService(loadServerConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env }))
  )

const refusal = async (env: Record<string, string>) => {
  const exit = await load(env)
  if (Exit.isSuccess(exit)) throw new Error(`accepted ${JSON.stringify(env)}`)
  const error = exit.cause.reasons.map((reason) => ("error" in reason ? reason.error : undefined))[0]
  return error as { readonly _tag: string; readonly variable: string; readonly message: string }
}

describe("loadServerConfig", () => {
  it("takes bare addresses in TROUPE_TRUSTED_PROXIES as /32 and /128 beside CIDRs", async () => {
    const exit = await load({ TROUPE_TRUSTED_PROXIES: "127.0.0.1, ::1 ,10.0.0.0/8,," })
    expect(Exit.isSuccess(exit) && exit.value.trustedProxies).toEqual(["127.0.0.1/32", "::1/128", "10.0.0.0/8"])
  })

  it("reads SERVICE_DEPLOYMENT_SOCKET as an absolute path; unset or empty, no updater", async () => {
    const set = await load({ SERVICE_DEPLOYMENT_SOCKET: "run/updater.sock" })
    expect(Exit.isSuccess(set) && set.value.deploymentSocket).toBe(resolve("run/updater.sock"))
    for (const env of [{}, { SERVICE_DEPLOYMENT_SOCKET: "" }] as Array<Record<string, string>>) {
      const unset = await load(env)
      expect(Exit.isSuccess(unset) && unset.value.deploymentSocket).toBeUndefined()
    }
  })

  it("exports nothing without OTEL_EXPORTER_OTLP_ENDPOINT, and reads the OTLP variables the SDKs read", async () => {
    const off = await load({ OTEL_SERVICE_NAME: "ignored" })
    expect(Exit.isSuccess(off) && off.value.telemetry).toBeUndefined()
    const defaults = await load({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://otlp.example.com/base" })
    expect(Exit.isSuccess(defaults) && defaults.value.telemetry).toMatchObject({
      endpoint: new URL("https://otlp.example.com/base"),
      protocol: "http/protobuf",
      serviceName: "troupe"
    })
    const set = await load({
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318",
      OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      OTEL_SERVICE_NAME: "troupe-eu",
      OTEL_EXPORTER_OTLP_HEADERS: "Api-Key=a%2Cb%3Dc , x-team=ops,"
    })
    if (Exit.isFailure(set) || set.value.telemetry === undefined) throw new Error("refused")
    expect(set.value.telemetry).toMatchObject({ protocol: "http/json", serviceName: "troupe-eu" })
    expect(Redacted.value(set.value.telemetry.headers)).toEqual({ "api-key": "a,b=c", "x-team": "ops" })
    expect(String(set.value.telemetry.headers)).not.toContain("a,b=c")
  })

  it("reads the sampler variables as the SDKs do, only with the exporter on", async () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:4318" }
    const sampler = async (env: Record<string, string>) => {
      const exit = await load({ ...endpoint, ...env })
      if (Exit.isFailure(exit) || exit.value.telemetry === undefined) throw new Error("refused")
      return exit.value.telemetry.sampler
    }
    expect(await sampler({})).toEqual({ name: "parentbased_always_on", ratio: 1 })
    expect(await sampler({ OTEL_TRACES_SAMPLER: " TraceIdRatio ", OTEL_TRACES_SAMPLER_ARG: "0.25" })).toEqual({
      name: "traceidratio",
      ratio: 0.25
    })
    expect(await sampler({ OTEL_TRACES_SAMPLER: "parentbased_traceidratio" })).toEqual({
      name: "parentbased_traceidratio",
      ratio: 1
    })
    expect(await sampler({ OTEL_TRACES_SAMPLER: "always_off", OTEL_TRACES_SAMPLER_ARG: "ignored" })).toEqual({
      name: "always_off",
      ratio: 1
    })
    const off = await load({ OTEL_TRACES_SAMPLER: "jaeger_remote" })
    expect(Exit.isSuccess(off) && off.value.telemetry).toBeUndefined()
  })

  it("refuses a TROUPE_TRUSTED_PROXIES entry that is no address, naming the entry", async () => {
    expect(await refusal({ TROUPE_TRUSTED_PROXIES: "127.0.0.1,proxy.internal" })).toMatchObject({
      _tag: "ConfigurationError",
      variable: "TROUPE_TRUSTED_PROXIES",
      message: expect.stringMatching(
        /^TROUPE_TRUSTED_PROXIES=127\.0\.0\.1,proxy\.internal is not a list of IP addresses and CIDRs \("proxy\.internal": .*\); separate them by commas, such as 10\.0\.0\.0\/8,192\.168\.1\.5$/
      )
    })
  })

  it.each([
    [{ PORT: "99999" }, "PORT", "PORT=99999 is not a port; set PORT to a whole number from 1 to 65535, such as 4000"],
    [
      { PUBLIC_BASE_URL: "ftp://x/" },
      "PUBLIC_BASE_URL",
      "PUBLIC_BASE_URL=ftp://x/ is not an absolute http(s) URL; set it to the address clients use, such as https://troupe.example.com"
    ],
    [
      { DATABASE_URL: "postgres://u:pw@h/db", DATABASE_POOL_SIZE: "0" },
      "DATABASE_POOL_SIZE",
      "DATABASE_POOL_SIZE=0 is not a pool size; set DATABASE_POOL_SIZE to a whole number of connections, 1 or more, such as 10"
    ],
    [
      { TROUPE_TRUSTED_PROXIES: "10.0.0.1/8" },
      "TROUPE_TRUSTED_PROXIES",
      'TROUPE_TRUSTED_PROXIES=10.0.0.1/8 is not a list of IP addresses and CIDRs ("10.0.0.1/8": address has non-zero host bits); separate them by commas, such as 10.0.0.0/8,192.168.1.5'
    ],
    [
      { LOG_LEVEL: "loud" },
      "LOG_LEVEL",
      "LOG_LEVEL=loud is not a log level; set LOG_LEVEL to one of All, Trace, Debug, Info, Warn, Error, Fatal, None"
    ],
    [
      { SERVICE_OAUTH_REDIRECT_URIS: '["/callback"]' },
      "SERVICE_OAUTH_REDIRECT_URIS",
      'SERVICE_OAUTH_REDIRECT_URIS=["/callback"] must be a JSON array of absolute http(s) callback URLs, such as ["https://app.example.com/auth/callback"]'
    ],
    [
      { SERVICE_OAUTH_REDIRECT_URIS: "https://app.example.com/auth/callback" },
      "SERVICE_OAUTH_REDIRECT_URIS",
      'SERVICE_OAUTH_REDIRECT_URIS=https://app.example.com/auth/callback must be a JSON array of absolute http(s) callback URLs, such as ["https://app.example.com/auth/callback"]'
    ],
    [
      { SERVICE_OAUTH_ALLOW_HTTP: "maybe" },
      "SERVICE_OAUTH_ALLOW_HTTP",
      "SERVICE_OAUTH_ALLOW_HTTP=maybe is not a boolean; set SERVICE_OAUTH_ALLOW_HTTP to true or false"
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "localhost:4318" },
      "OTEL_EXPORTER_OTLP_ENDPOINT",
      "OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318 is not an absolute http(s) URL; set it to the OTLP/HTTP collector's base address, such as http://localhost:4318, or unset it to export nothing"
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4317", OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" },
      "OTEL_EXPORTER_OTLP_PROTOCOL",
      "OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not a protocol Troupe exports with; set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf (the default) or http/json"
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4318", OTEL_EXPORTER_OTLP_HEADERS: "api-key: s3cret" },
      "OTEL_EXPORTER_OTLP_HEADERS",
      "OTEL_EXPORTER_OTLP_HEADERS is not a list of name=value pairs (its value is not shown: it may hold a credential); write it as api-key=SECRET,x-team=ops with each value percent-encoded"
    ],
    [
      { OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4318", OTEL_TRACES_SAMPLER: "jaeger_remote" },
      "OTEL_TRACES_SAMPLER",
      "OTEL_TRACES_SAMPLER=jaeger_remote is not a sampler Troupe offers; set it to parentbased_always_on (the default), parentbased_always_off, parentbased_traceidratio, always_on, always_off or traceidratio"
    ],
    ...["a tenth", "1.5", "-0.1", "0x1", "Infinity"].map((arg): [Record<string, string>, string, string] => [
      {
        OTEL_EXPORTER_OTLP_ENDPOINT: "http://localhost:4318",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: arg
      },
      "OTEL_TRACES_SAMPLER_ARG",
      `OTEL_TRACES_SAMPLER_ARG=${arg} is not a ratio for parentbased_traceidratio; set it to the share of traces to keep, a number from 0 to 1 such as 0.25`
    ]),
    [
      { DATABASE_URL: "mysql://root:s3cret@db/troupe" },
      "DATABASE_URL",
      "DATABASE_URL is not a PostgreSQL connection URL (its value is not shown: it may hold a password); write it as postgres://USER:PASSWORD@HOST:5432/DATABASE, or unset it for the embedded database"
    ]
  ])("refuses %j naming %s", async (env, variable, message) => {
    expect(await refusal(env)).toMatchObject({ _tag: "ConfigurationError", variable, message })
  })
})
