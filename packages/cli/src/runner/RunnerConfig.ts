// The reference runner's configuration file (JSON): where the server is, what the runner is
// called, and the tools it serves, each a command; read and checked once at start.
import { EffectProfile } from "@troupe/contracts/executor/Executor"
import { Effect, FileSystem, Schema } from "effect"

const nonBlank = Schema.makeFilter<string>((text) => text.trim() !== "", { expected: "a non-blank string" })

export const ToolConfig = Schema.Struct({
  name: Schema.String.check(nonBlank, Schema.isMaxLength(128)),
  /** An argv array (run without a shell) or one line of shell text (run by /bin/sh). */
  command: Schema.Union([Schema.String.check(nonBlank), Schema.Array(Schema.String).check(Schema.isMinLength(1))]),
  timeout_ms: Schema.optionalKey(Schema.Int.check(Schema.isGreaterThan(0))),
  description: Schema.optionalKey(Schema.String.check(Schema.isMaxLength(4096))),
  input_schema: Schema.optionalKey(Schema.Record(Schema.String, Schema.Unknown)),
  effect_profile: Schema.optionalKey(EffectProfile)
})
export type ToolConfig = typeof ToolConfig.Type

export const RunnerConfig = Schema.Struct({
  base_url: Schema.optionalKey(Schema.String),
  display_name: Schema.optionalKey(Schema.String.check(nonBlank, Schema.isMaxLength(100))),
  tools: Schema.Array(ToolConfig)
})
export type RunnerConfig = typeof RunnerConfig.Type

/**
 * A tool that says nothing of its effects is taken at its most cautious: a write that is not
 * idempotent, so a claimed call past its deadline settles uncertain instead of being replayed.
 */
export const cautiousProfile: typeof EffectProfile.Type = {
  kind: "write",
  destructive: false,
  effect_scope: "open",
  idempotency: "none",
  reconciliation: "none"
}

/** The announcement body for these tools. */
export const announcementOf = (config: RunnerConfig) => ({
  tools: config.tools.map((tool) => ({
    name: tool.name,
    effect_profile: tool.effect_profile ?? cautiousProfile,
    ...(tool.timeout_ms === undefined ? {} : { timeout_ms: tool.timeout_ms }),
    ...(tool.description === undefined ? {} : { description: tool.description }),
    ...(tool.input_schema === undefined ? {} : { input_schema: tool.input_schema })
  })),
  environment: null,
  documents: []
})

const decodeConfig = Schema.decodeUnknownEffect(RunnerConfig)

/** Reads and checks the file; a fault is one Error naming the file and what is wrong. */
export const loadRunnerConfig = (path: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs
      .readFileString(path)
      .pipe(Effect.mapError((error) => new Error(`Cannot read the runner configuration ${path}: ${error.message}`)))
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (error) => new Error(`The runner configuration ${path} is not JSON: ${String(error)}`)
    })
    const config = yield* decodeConfig(json).pipe(
      Effect.mapError((error) => new Error(`The runner configuration ${path} is invalid: ${error.message}`))
    )
    const names = new Set<string>()
    for (const tool of config.tools) {
      if (names.has(tool.name)) {
        return yield* Effect.fail(new Error(`The runner configuration ${path} names the tool ${tool.name} twice`))
      }
      names.add(tool.name)
    }
    return config
  })
