// Handler of GET /api/v1/profile: the human platform identity behind the credential, and whether
// that credential is a platform-plane access token (credential_plane "platform") or a session.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentPlatformCaller } from "@troupe/contracts/platform/Caller"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"

export const ProfileHandlers = HttpApiBuilder.group(TroupeApi, "profile", (handlers) =>
  handlers.handle("show", () =>
    Effect.map(CurrentPlatformCaller, ({ user, credential }) => ({
      member: {
        public_id: user.publicId,
        kind: "human" as const,
        role: user.role,
        handle: user.handle,
        display_name: user.displayName
      },
      credential_plane: credential.kind === "access_token" ? ("platform" as const) : null
    }))
  )
)
