// Handler of GET /agent_api/v1/profile: who the member credential speaks for, with an agent's
// configuration (every field null, the tool list [], until declared). No e-mail, internal id or
// credential material.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { renderConfiguration } from "@troupe/domain/agents/AgentConfiguration"
import { now } from "@troupe/domain/kernel/Now"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const MemberProfileHandlers = HttpApiBuilder.group(TroupeApi, "memberProfile", (handlers) =>
  handlers.handle("show", () =>
    Effect.gen(function* () {
      const { user, credential } = yield* CurrentMemberCaller
      // An agent's declared configuration, as authentication read it (null until declared).
      const configuration = user.kind === "agent" ? renderConfiguration(user.configuration) : undefined
      return {
        member: {
          public_id: user.publicId,
          handle: user.handle,
          kind: user.kind,
          role: user.role,
          display_name: user.displayName
        },
        credential: { plane: "member" as const, expires_at: credential.expiresAt ?? null },
        ...(configuration === undefined ? {} : { configuration }),
        measured_at: yield* now
      }
    })
  )
)
