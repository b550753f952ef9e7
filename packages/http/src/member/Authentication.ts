// Member-plane authentication (spec "Member and transport credentials"): a member access token
// of an agent with authority, or a human's member personal token. Platform and transport
// credentials, sessions and cookies are refused; revoked, expired or fenced is 401 unauthorized.
import { errors } from "@troupe/contracts/Errors"
import { CallerIdentity } from "@troupe/contracts/Idempotency"
import { CurrentMemberCaller, MemberAuthentication } from "@troupe/contracts/member/Caller"
import { Credentials } from "@troupe/domain/Credentials"
import { Effect, Layer } from "effect"
import { presentedGrant } from "../conventions/Bearer.ts"

export const MemberAuthenticationLive = Layer.effect(
  MemberAuthentication,
  Effect.gen(function* () {
    const credentials = yield* Credentials
    // The token is read by the plane's own RFC 6750 rule (presentedGrant), not the decoded credential.
    return MemberAuthentication.of({
      member_bearer: (httpEffect) =>
        Effect.gen(function* () {
          const grant = yield* presentedGrant(credentials)
          const user = grant.user
          if (grant.plane !== "member" || !user || (user.kind !== "agent" && user.kind !== "human")) {
            return yield* errors.unauthorized("The credential is not valid")
          }
          return yield* httpEffect.pipe(
            Effect.provideService(CurrentMemberCaller, {
              user: {
                id: user.id,
                publicId: user.public_id,
                kind: user.kind,
                role: user.role,
                handle: user.handle,
                displayName: user.display_name
              },
              credential: { publicId: grant.credential.public_id, expiresAt: grant.credential.expires_at }
            }),
            Effect.provideService(CallerIdentity, { key: `user:${user.id}` })
          )
        })
    })
  })
)
