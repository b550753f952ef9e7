// Handler of GET /agent_api/v1/tools: the kernel tool catalog (domain executors/KernelTools) for
// any member credential, ordered by canonical name, descriptions rendered with the wire names.
import { TroupeApi } from "@troupe/contracts/Api"
import { kernelTools, renderKernelDescription } from "@troupe/domain/executors/KernelTools"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

/** The catalog as the route answers it; it never changes while the server runs. */
const catalog = kernelTools
  .toSorted((a, b) => (a.canonical < b.canonical ? -1 : a.canonical > b.canonical ? 1 : 0))
  .map((tool) => ({
    canonical_name: tool.canonical,
    name: tool.wire,
    effect_profile: tool.effectProfile,
    definition: {
      type: "function" as const,
      function: { name: tool.wire, description: renderKernelDescription(tool), parameters: tool.parameters }
    },
    template: tool.template
  }))

export const ToolsHandlers = HttpApiBuilder.group(TroupeApi, "tools", (handlers) =>
  handlers.handle("list", () => Effect.succeed({ tools: catalog }))
)
