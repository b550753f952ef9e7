// The kernel tools an agent imports (runs supplement "Tool catalog"): `kernel_tools` and kernel
// declarations by canonical name, called by their wire names; and the definition a round is
// offered for one.
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { kernelTool, renderKernelDescription } from "../executors/KernelTools.ts"

/** The imported kernel tools by the name a model calls (wire name or alias) → canonical name. */
export const kernelImportsOf = (configuration: unknown): Record<string, string> => {
  const rendered = renderConfiguration(configuration)
  const imports: Record<string, string> = {}
  for (const canonical of rendered.kernel_tools ?? []) {
    const tool = kernelTool(canonical)
    if (tool !== undefined) imports[tool.wire] = canonical
  }
  for (const declared of rendered.tool_definitions) {
    if (declared.type !== "kernel") continue
    const tool = kernelTool(declared.name)
    if (tool !== undefined) imports[tool.wire] = declared.name
  }
  return imports
}

/** The definition a round is offered for an imported kernel tool called `name`. */
export const kernelDefinitionOf = (name: string, canonical: string) => {
  const tool = kernelTool(canonical)
  return tool === undefined
    ? undefined
    : {
        type: "function",
        function: { name, description: renderKernelDescription(tool), parameters: tool.parameters }
      }
}
