// Platform: profile. GET /api/v1/profile (SUPPLEMENT "Platform profile"): the human behind the
// platform credential and which plane that credential is. No e-mail, no credential material.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PlatformAuthentication } from "./Caller.ts"

export const PlatformMember = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literal("human"),
  role: Schema.Literals(["owner", "admin", "member"]),
  handle: Schema.String,
  display_name: Schema.String
})

export const PlatformProfile = Schema.Struct({
  member: PlatformMember,
  credential_plane: Schema.NullOr(Schema.Literal("platform")).annotate({
    description: "null for an API session bearer or the browser cookie; platform for a platform-plane access token"
  })
})

export class ProfileGroup extends HttpApiGroup.make("profile")
  .add(
    HttpApiEndpoint.get("show", "/api/v1/profile", { success: PlatformProfile })
      .annotate(
        OpenApi.Description,
        "The caller's platform identity: {member: {public_id, kind, role, handle, display_name}, credential_plane} (null for a session bearer or the cookie, platform for a platform access token)."
      )
      .middleware(PlatformAuthentication)
  )
  .annotateMerge(OpenApi.annotations({ title: "Platform: profile" })) {}
