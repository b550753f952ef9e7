// Handler of GET /agent_api/v1/profile: who the member credential speaks for, with an agent's
// configuration (every field null, the tool list [], until declared). No e-mail, internal id or
// credential material.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { now } from "@troupe/domain/Now"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

const undeclaredConfiguration = {
  tool_definitions: [],
  kernel_tools: null,
  runner_executor_public_ids: null,
  runner_tool_names: null,
  approval_mode: null,
  approval_rules: null,
  prompt_mechanism: null,
  prompt_template: null,
  compaction_policy: null,
  lifecycle_hooks: null,
  memory_context_limit: null,
  conversation_reach: null,
  default_model: null,
  fallback_models: null
}

export const MemberProfileHandlers = HttpApiBuilder.group(TroupeApi, "memberProfile", (handlers) =>
  handlers.handle("show", () =>
    Effect.gen(function* () {
      const { user, credential } = yield* CurrentMemberCaller
      return {
        member: {
          public_id: user.publicId,
          handle: user.handle,
          kind: user.kind,
          role: user.role,
          display_name: user.displayName
        },
        credential: { plane: "member" as const, expires_at: credential.expiresAt?.toISOString() ?? null },
        ...(user.kind === "agent" ? { configuration: undeclaredConfiguration } : {}),
        measured_at: (yield* now).toISOString()
      }
    })
  )
)
