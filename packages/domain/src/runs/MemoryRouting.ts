// A run's memory call in a workspace whose svc.memory a tool provider overrides (spec "Tool
// provider overrides": while overridden, the six verbs route to the provider): the provider it goes
// to as a runner's tool call, or tool_not_served when that provider is not live or does not announce
// the verb's wire name; and the scope its inbox row shows (a hosted run's conversation bindings).
import type { KernelRoute } from "@troupe/actors/bindings/run"
import { defaultToolTimeoutMillis } from "@troupe/machines/run/rules/graph"
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { ExecutorsRepository } from "@troupe/storage/repositories/Executors"
import type { RunRow, TaskRow } from "@troupe/storage/repositories/Runs"
import { WorkspacesRepository } from "@troupe/storage/repositories/Workspaces"
import { Effect } from "effect"
import { resolvedBindings } from "../conversations/Views.ts"
import { replayable } from "../executors/EffectProfiles.ts"
import { kernelTool } from "../executors/KernelTools.ts"
import { isObject } from "../kernel/Json.ts"
import { memoryProviderOf, overridableNamespace } from "../workspaces/WorkspaceSettings.ts"

/**
 * A hosted run's scope: its conversation's memory_context resolved (the default roots when null),
 * anchored to the run's creator's human (user/) and the conversation's answering agent (agent/).
 */
const scopeOf = (run: RunRow) =>
  Effect.gen(function* () {
    if (run.conversation_public_id === null) return null
    const conversations = yield* ConversationsRepository.make
    const conversation = yield* conversations.findConversation(run.conversation_public_id)
    if (conversation === undefined) return null
    const [creator] = yield* conversations.speakers([run.creator_id])
    const humanId = creator?.steward_id ?? run.creator_id
    const people = yield* conversations.speakers([humanId, conversation.answerer_id])
    const human = people.find((each) => each.id === humanId)
    const answerer = people.find((each) => each.id === conversation.answerer_id)
    return resolvedBindings(conversation.memory_context, {
      conversation: conversation.public_id,
      workspace: run.workspace_public_id,
      user: human?.public_id ?? null,
      agent: answerer?.kind === "agent" ? answerer.public_id : null
    })
  })

/**
 * Where a memory call goes when the run's workspace overrides svc.memory: `routed` to the provider,
 * `not_served` when it cannot take it; undefined when the call is not overridden (the service's).
 */
export const routeOverridden = (run: RunRow, task: TaskRow, canonical: string) =>
  Effect.gen(function* () {
    if (!canonical.startsWith(`${overridableNamespace}.`)) return undefined
    const workspace = yield* (yield* WorkspacesRepository.make).findWorkspace(run.workspace_public_id)
    const providerId = memoryProviderOf(workspace?.tool_provider_overrides)
    if (providerId === undefined) return undefined
    const provider = yield* (yield* ExecutorsRepository.make).findExecutorByPublicId(providerId)
    const wire = kernelTool(canonical)?.wire
    const tool = provider?.announcement.tools.find((each) => each.name === wire)
    if (provider === undefined || provider.status !== "active" || tool === undefined) return "not_served" as const
    const spec = isObject(task.spec) ? task.spec : {}
    const routed: KernelRoute = {
      executor: { executorId: provider.public_id, displayName: provider.display_name },
      timeoutMs: tool.timeout_ms ?? defaultToolTimeoutMillis,
      ...(tool.timeout_ms === undefined ? {} : { announcedTimeoutMs: tool.timeout_ms }),
      replayable: replayable(tool.effect_profile),
      toolCallId: typeof spec.tool_call_id === "string" ? spec.tool_call_id : task.key,
      scope: yield* scopeOf(run)
    }
    return { routed }
  })
