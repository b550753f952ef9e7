// Handler of GET /api/v1/profile: the human platform identity behind the credential.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ProfileHandlers = HttpApiBuilder.group(TroupeApi, "profile", (handlers) =>
  handlers.handle("show", () =>
    Effect.map(CurrentPlatformCaller, ({ user, credential }) => ({
      profile: {
        public_id: user.publicId,
        kind: "human" as const,
        role: user.role,
        email: user.email,
        display_name: user.displayName,
        handle: user.handle,
        credential: {
          kind:
            credential.kind === "access_token"
              ? ("access_token" as const)
              : credential.sessionKind === "api"
                ? ("api_session" as const)
                : ("browser_session" as const),
          public_id: credential.publicId,
          expires_at: credential.expiresAt?.toISOString() ?? null
        }
      }
    }))
  )
)
