// The dedication fence (SUPPLEMENT "Workspace ownership and access"; spec "Named agent
// definition"; conversations supplement "Standing"): a workspace dedicated to agent X refuses
// writes from every other agent. A named definition passes where its declarer does (instance
// scope) or always (steward scope). Humans are never fenced. Only an agent the fence would refuse
// costs a read (whether it is a named definition).
import { NamedAgentsRepository } from "@troupe/storage/repositories/NamedAgents"
import { Effect } from "effect"

export const passesFence = Effect.fnUntraced(function* (
  dedicatedAgentId: bigint | null,
  writer: { readonly id: bigint; readonly kind: "agent" | "human" }
) {
  if (writer.kind !== "agent" || dedicatedAgentId === null || dedicatedAgentId === writer.id) return true
  const named = yield* (yield* NamedAgentsRepository).findByUserId(writer.id)
  return named !== undefined && (named.scope === "steward" || named.derived_from_id === dedicatedAgentId)
})
