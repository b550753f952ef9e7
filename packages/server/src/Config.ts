// Deployment configuration from the environment (README, "Configuration"). A bad value fails
// with a ConfigurationError: one sentence naming the variable, what it must be, and an example.
import { readFile } from "node:fs/promises"
import { resolve } from "node:path"
import { type ModelCatalogFile, parseModelCatalogFile } from "@troupe/domain/models/Catalog"
import type { DatabaseConfig } from "@troupe/storage/Database"
import { Config, Effect, type LogLevel, Option, Redacted, Result } from "effect"
import { IpNetwork } from "effect/net"
import { ConfigurationError } from "./ConfigurationError.ts"
import { loadSampler, type Sampler } from "./Sampling.ts"

export interface ServerConfig {
  readonly port: number
  readonly host: string
  readonly publicBaseUrl: URL
  readonly database: DatabaseConfig
  readonly dataDir: string
  readonly setupSecret: Redacted.Redacted<string> | undefined
  /** Canonical CIDRs; a bare address in TROUPE_TRUSTED_PROXIES stands for itself (/32 or /128). */
  readonly trustedProxies: ReadonlyArray<string>
  readonly logLevel: LogLevel.LogLevel
  /** Exact allowed application callbacks (SERVICE_OAUTH_REDIRECT_URIS), or the default policy. */
  readonly redirectUris: ReadonlyArray<string> | undefined
  readonly allowHttpRedirects: boolean
  /** This node's place in the cluster of servers sharing one PostgreSQL; absent on the embedded database. */
  readonly cluster?: ClusterConfig | undefined
  /** Where spans and logs are exported over OTLP/HTTP (OTEL_EXPORTER_OTLP_ENDPOINT); unset: nothing is exported. */
  readonly telemetry?: TelemetryConfig | undefined
  /** The providers and models TROUPE_MODEL_CATALOG adds to the local ones; unset: local models alone. */
  readonly modelCatalog?: ModelCatalogFile | undefined
  /** The installation updater's socket (SERVICE_DEPLOYMENT_SOCKET); unset: deployment is unsupported. */
  readonly deploymentSocket?: string | undefined
}

/** Where the other nodes reach this one (TROUPE_CLUSTER_HOST, TROUPE_CLUSTER_PORT). */
export interface ClusterConfig {
  readonly host: string
  /** Unset: a free port is chosen at boot (fine on one machine; set it where nodes are apart). */
  readonly port: number | undefined
}

export interface TelemetryConfig {
  /** The collector's base address: traces go to `/v1/traces` below it, logs to `/v1/logs`. */
  readonly endpoint: URL
  readonly protocol: "http/protobuf" | "http/json"
  readonly serviceName: string
  /** Sent with every export (often a vendor's API key), so never logged. */
  readonly headers: Redacted.Redacted<Readonly<Record<string, string>>>
  /** Which traces are exported (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG). */
  readonly sampler: Sampler
}

/** The raw text of a variable, for the message (never for a secret). */
const rawValue = (name: string) => Effect.orElseSucceed(Config.option(Config.String(name)), () => Option.none<string>())

const refuse = (name: string, rule: string, options: { readonly secret?: boolean } = {}) =>
  Effect.flatMap(rawValue(name), (raw) => {
    const shown = options.secret === true ? "" : Option.match(raw, { onNone: () => "", onSome: (value) => `=${value}` })
    return Effect.fail(new ConfigurationError({ variable: name, message: `${name}${shown} ${rule}` }))
  })

/** Reads a variable; a value that does not fit `config` (or `accept`) is refused with `rule`. */
const variable = <A>(
  name: string,
  config: Config.Config<A>,
  rule: string,
  accept: (value: A) => boolean = () => true
) =>
  Effect.catch(config, () => refuse(name, rule)).pipe(
    Effect.flatMap((value) => (accept(value) ? Effect.succeed(value) : refuse(name, rule)))
  )

const httpUrl = (text: string) => {
  const url = URL.parse(text)
  return url !== null && (url.protocol === "http:" || url.protocol === "https:")
}

/** One TROUPE_TRUSTED_PROXIES entry as a canonical CIDR; a bare address is a /32 or /128. */
const proxyNetwork = (entry: string): Result.Result<string, string> =>
  Result.match(IpNetwork.fromString(entry.includes("/") ? entry : `${entry}/${entry.includes(":") ? 128 : 32}`), {
    onFailure: (error) => Result.fail(`"${entry}": ${error.message}`),
    onSuccess: (network) => Result.succeed(IpNetwork.format(network))
  })

const loadTrustedProxies = Effect.gen(function* () {
  const text = yield* Config.String("TROUPE_TRUSTED_PROXIES").pipe(Config.withDefault(""))
  const networks: Array<string> = []
  for (const entry of text.split(",").map((part) => part.trim())) {
    if (entry === "") continue
    const network = proxyNetwork(entry)
    if (Result.isFailure(network)) {
      return yield* refuse(
        "TROUPE_TRUSTED_PROXIES",
        `is not a list of IP addresses and CIDRs (${network.failure}); separate them by commas, such as 10.0.0.0/8,192.168.1.5`
      )
    }
    networks.push(network.success)
  }
  return networks
})

const loadRedirectUris = Effect.gen(function* () {
  const text = yield* Config.option(Config.String("SERVICE_OAUTH_REDIRECT_URIS"))
  if (Option.isNone(text)) return undefined
  const list: unknown = yield* Effect.try({ try: () => JSON.parse(text.value), catch: () => undefined }).pipe(
    Effect.orElseSucceed(() => undefined)
  )
  if (!Array.isArray(list) || !list.every((item) => typeof item === "string" && httpUrl(item))) {
    return yield* refuse(
      "SERVICE_OAUTH_REDIRECT_URIS",
      `must be a JSON array of absolute http(s) callback URLs, such as ["https://app.example.com/auth/callback"]`
    )
  }
  return list as ReadonlyArray<string>
})

const loadDatabaseUrl = Effect.gen(function* () {
  const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
  if (Option.isNone(url)) return url
  const parsed = URL.parse(Redacted.value(url.value))
  if (parsed === null || (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:")) {
    return yield* refuse(
      "DATABASE_URL",
      "is not a PostgreSQL connection URL (its value is not shown: it may hold a password); write it as postgres://USER:PASSWORD@HOST:5432/DATABASE, or unset it for the embedded database",
      { secret: true }
    )
  }
  return url
})

/** OTEL_EXPORTER_OTLP_HEADERS as the OpenTelemetry SDKs read it: `name=value` pairs, values percent-encoded. */
const otlpHeaders = (text: string): Record<string, string> | undefined => {
  const headers: Record<string, string> = {}
  for (const entry of text.split(",")) {
    if (entry.trim() === "") continue
    const at = entry.indexOf("=")
    const name = entry.slice(0, Math.max(at, 0)).trim()
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) return undefined
    try {
      headers[name.toLowerCase()] = decodeURIComponent(entry.slice(at + 1).trim())
    } catch {
      return undefined
    }
  }
  return headers
}

const loadTelemetry = Effect.gen(function* () {
  const endpoint = yield* variable(
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    Config.String("OTEL_EXPORTER_OTLP_ENDPOINT").pipe(Config.withDefault("")),
    "is not an absolute http(s) URL; set it to the OTLP/HTTP collector's base address, such as http://localhost:4318, or unset it to export nothing",
    (text) => text === "" || httpUrl(text)
  )
  if (endpoint === "") return undefined
  const protocol = yield* variable(
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    Config.Literals(["http/protobuf", "http/json"], "OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
      Config.withDefault("http/protobuf" as const)
    ),
    "is not a protocol Troupe exports with; set OTEL_EXPORTER_OTLP_PROTOCOL to http/protobuf (the default) or http/json"
  )
  const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault(""))
  const headers = otlpHeaders(yield* Config.String("OTEL_EXPORTER_OTLP_HEADERS").pipe(Config.withDefault("")))
  if (headers === undefined) {
    return yield* refuse(
      "OTEL_EXPORTER_OTLP_HEADERS",
      "is not a list of name=value pairs (its value is not shown: it may hold a credential); write it as api-key=SECRET,x-team=ops with each value percent-encoded",
      { secret: true }
    )
  }
  const sampler = yield* loadSampler
  return {
    endpoint: new URL(endpoint),
    protocol,
    serviceName: serviceName === "" ? "troupe" : serviceName,
    headers: Redacted.make(headers),
    sampler
  } satisfies TelemetryConfig
})

/** TROUPE_MODEL_CATALOG: the path of a JSON file of providers and models, read and checked at boot. */
const loadModelCatalog = Effect.gen(function* () {
  const path = yield* Config.option(Config.String("TROUPE_MODEL_CATALOG"))
  if (Option.isNone(path) || path.value === "") return undefined
  const text = yield* Effect.tryPromise(() => readFile(resolve(path.value), "utf8")).pipe(
    Effect.catch((error) =>
      refuse(
        "TROUPE_MODEL_CATALOG",
        `cannot be read (${(error.cause as NodeJS.ErrnoException).code ?? String(error.cause)}); set it to the path of a readable JSON model catalog, or unset it for the local models alone`
      )
    )
  )
  return yield* Result.match(parseModelCatalogFile(text), {
    onFailure: (fault) =>
      refuse(
        "TROUPE_MODEL_CATALOG",
        `is not a model catalog: ${fault}; write it as {"providers": {"<id>": {"base_url", "api_key_env"?}}, "models": {"<id>/<name>": {"workloads", "context_window", "input_modalities", ...}}} (README, "Pointing Troupe at a model server")`
      ),
    onSuccess: (file) => Effect.succeed(file)
  })
})

export const loadServerConfig = Effect.gen(function* () {
  const port = yield* variable(
    "PORT",
    Config.Port("PORT").pipe(Config.withDefault(4000)),
    "is not a port; set PORT to a whole number from 1 to 65535, such as 4000"
  )
  const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
  const publicBaseUrl = yield* variable(
    "PUBLIC_BASE_URL",
    Config.URL("PUBLIC_BASE_URL").pipe(Config.withDefault(new URL(`http://localhost:${port}`))),
    "is not an absolute http(s) URL; set it to the address clients use, such as https://troupe.example.com",
    (url) => url.protocol === "http:" || url.protocol === "https:"
  )
  const dataDir = resolve(yield* Config.String("TROUPE_DATA_DIR").pipe(Config.withDefault("./.troupe/data")))
  const databaseUrl = yield* loadDatabaseUrl
  const poolSize = yield* variable(
    "DATABASE_POOL_SIZE",
    Config.Int("DATABASE_POOL_SIZE").pipe(Config.withDefault(10)),
    "is not a pool size; set DATABASE_POOL_SIZE to a whole number of connections, 1 or more, such as 10",
    (size) => size >= 1
  )
  const setupSecret = yield* Config.Redacted("SERVICE_SETUP_SECRET").pipe(Config.option)
  const trustedProxies = yield* loadTrustedProxies
  const logLevel = yield* variable(
    "LOG_LEVEL",
    Config.LogLevel("LOG_LEVEL").pipe(Config.withDefault("Info")),
    "is not a log level; set LOG_LEVEL to one of All, Trace, Debug, Info, Warn, Error, Fatal, None"
  )
  const redirectUris = yield* loadRedirectUris
  const allowHttpRedirects = yield* variable(
    "SERVICE_OAUTH_ALLOW_HTTP",
    Config.Boolean("SERVICE_OAUTH_ALLOW_HTTP").pipe(Config.withDefault(false)),
    "is not a boolean; set SERVICE_OAUTH_ALLOW_HTTP to true or false"
  )
  const telemetry = yield* loadTelemetry
  const modelCatalog = yield* loadModelCatalog
  const deploymentSocket = yield* Config.String("SERVICE_DEPLOYMENT_SOCKET").pipe(Config.withDefault(""))
  const clusterHost = yield* Config.String("TROUPE_CLUSTER_HOST").pipe(Config.withDefault("127.0.0.1"))
  const clusterPort = yield* variable(
    "TROUPE_CLUSTER_PORT",
    Config.option(Config.Port("TROUPE_CLUSTER_PORT")),
    "is not a port; set TROUPE_CLUSTER_PORT to a whole number from 1 to 65535, such as 4100, or unset it for a free one"
  )
  const database: DatabaseConfig = Option.match(databaseUrl, {
    onNone: () => ({ _tag: "embedded", dataDir: resolve(dataDir, "pg") }),
    onSome: (url) => ({ _tag: "postgres", url, maxConnections: poolSize })
  })
  return {
    port,
    host,
    publicBaseUrl,
    database,
    dataDir,
    setupSecret: Option.getOrUndefined(Option.filter(setupSecret, (secret) => Redacted.value(secret) !== "")),
    trustedProxies,
    logLevel,
    redirectUris,
    allowHttpRedirects,
    cluster: database._tag === "postgres" ? { host: clusterHost, port: Option.getOrUndefined(clusterPort) } : undefined,
    telemetry,
    modelCatalog,
    deploymentSocket: deploymentSocket === "" ? undefined : resolve(deploymentSocket)
  } satisfies ServerConfig
})
