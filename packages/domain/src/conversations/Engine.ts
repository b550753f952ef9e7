// Which engine answers a reply (spec "Engine selection"), decided in one place: the answering
// agent's configuration makes it run-backed (explicit tool definitions, imported kernel tools,
// lifecycle hooks, or runner imports: runner executors named and runner_tool_names not []);
// otherwise, and for a human answerer, a direct model invocation. Runs plug in here.
import { renderConfiguration } from "../agents/AgentConfiguration.ts"

export type Engine = "direct" | "run"

export const engineOf = (answerer: { readonly kind: string; readonly configuration: unknown }): Engine => {
  if (answerer.kind !== "agent") return "direct"
  const configuration = renderConfiguration(answerer.configuration)
  const runnerImports =
    (configuration.runner_executor_public_ids?.length ?? 0) > 0 &&
    !(configuration.runner_tool_names !== null && configuration.runner_tool_names.length === 0)
  return configuration.tool_definitions.length > 0 ||
    (configuration.kernel_tools?.length ?? 0) > 0 ||
    configuration.lifecycle_hooks !== null ||
    runnerImports
    ? "run"
    : "direct"
}
