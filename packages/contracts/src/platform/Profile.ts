// Platform: profile. GET /api/v1/profile returns the human platform credential's identity.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { PlatformAuthentication } from "./Caller.ts"

export const PlatformProfile = Schema.Struct({
  public_id: Schema.String,
  kind: Schema.Literal("human"),
  role: Schema.Literals(["owner", "admin", "member"]),
  email: Schema.String,
  display_name: Schema.String,
  handle: Schema.String,
  credential: Schema.Struct({
    kind: Schema.Literals(["api_session", "browser_session", "access_token"]),
    public_id: Schema.String,
    expires_at: Schema.NullOr(Schema.String)
  })
})

export class ProfileGroup extends HttpApiGroup.make("profile")
  .add(
    HttpApiEndpoint.get("show", "/api/v1/profile", {
      success: Schema.Struct({ profile: PlatformProfile })
    }).middleware(PlatformAuthentication)
  )
  .annotateMerge(OpenApi.annotations({ title: "Platform: profile" })) {}
