// `troupe runner --config FILE [--state PATH] [--base-url URL]`: the reference runner's command
// line; the work is Runner.ts. Failures that end it become one plain sentence for main.ts.
import { hostname } from "node:os"
import { Effect, Option } from "effect"
import { Command, Flag } from "effect/cli"
import { FetchHttpClient } from "effect/http"
import { runRunner } from "./Runner.ts"
import { loadRunnerConfig } from "./RunnerConfig.ts"
import { defaultStatePath, registrationIdentifier } from "./RunnerCredential.ts"

const defaultBaseUrl = "http://localhost:4000"

/**
 * One sentence for what ended the runner: the server's own words when it refused (an OAuth
 * `{error, error_description}` on /oauth, `{error: {code, message}}` elsewhere), else the message.
 */
const describe = (error: unknown) => {
  if (typeof error !== "object" || error === null) return String(error)
  const answered = error as {
    readonly error?: unknown
    readonly error_description?: unknown
    readonly initialization_uri?: unknown
    readonly message?: unknown
  }
  if (typeof answered.error === "string") {
    const where = typeof answered.initialization_uri === "string" ? ` (${answered.initialization_uri})` : ""
    return `The server refused: ${answered.error}: ${String(answered.error_description ?? "")}${where}`
  }
  const body = answered.error as { readonly code?: unknown; readonly message?: unknown } | undefined
  if (typeof body?.code === "string") return `The server refused: ${body.code}: ${String(body.message ?? "")}`
  return typeof answered.message === "string" && answered.message !== "" ? answered.message : String(error)
}

export const runner = Command.make(
  "runner",
  {
    config: Flag.File("config", { mustExist: true }).pipe(
      Flag.withDescription("The runner's configuration (JSON): base_url?, display_name?, tools")
    ),
    state: Flag.String("state").pipe(
      Flag.withDescription("Where the credential is kept (default: <config name>.credential.json beside it)"),
      Flag.optional
    ),
    baseUrl: Flag.String("base-url").pipe(
      Flag.withDescription(`The server (default: the configuration's base_url, else ${defaultBaseUrl})`),
      Flag.optional
    )
  },
  ({ config: configPath, state, baseUrl }) =>
    Effect.gen(function* () {
      const config = yield* loadRunnerConfig(configPath)
      const server = Option.getOrUndefined(baseUrl) ?? config.base_url ?? defaultBaseUrl
      yield* runRunner({
        config,
        baseUrl: server.replace(/\/+$/, ""),
        statePath: Option.getOrElse(state, () => defaultStatePath(configPath)),
        identifier: registrationIdentifier(configPath),
        displayName: config.display_name ?? `Runner on ${hostname()}`.slice(0, 100)
      })
    }).pipe(
      Effect.provide(FetchHttpClient.layer),
      Effect.mapError((error) => (error instanceof Error && !("_tag" in error) ? error : new Error(describe(error))))
    )
).pipe(
  Command.withDescription(
    "Run the reference runner: connect through the device flow, announce the configured tools, answer tool calls"
  )
)
