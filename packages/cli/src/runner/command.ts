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

const describe = (error: unknown) =>
  typeof error === "object" && error !== null && "message" in error ? String(error.message) : String(error)

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
