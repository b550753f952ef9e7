// Member-plane authentication (spec "Member and transport credentials"): a member access token
// of an agent with authority, or a human's member personal token. Platform and transport
// credentials, sessions and cookies are refused; revoked, expired or fenced is 401 unauthorized
// with the RFC 6750 challenge (conventions/Bearer.ts).
// It resolves the caller once: the member and the human whose access counts (itself, or the
// agent's steward), which handlers and domain commands take from CurrentMemberCaller.
import { CallerIdentity } from "@troupe/contracts/Idempotency"
import {
  CurrentMemberCaller,
  MemberAuthentication,
  type MemberCaller,
  type MemberPrincipal
} from "@troupe/contracts/member/Caller"
import type { User } from "@troupe/domain/accounts/Accounts"
import { type AccessGrant, Credentials } from "@troupe/domain/accounts/Credentials"
import { Effect, Layer } from "effect"
import { bearerRefusal, presentedGrant } from "../conventions/Bearer.ts"

const principalOf = (row: User, kind: "agent" | "human"): MemberPrincipal => ({
  id: row.id,
  accountId: row.account_id,
  publicId: row.public_id,
  kind,
  role: row.role,
  handle: row.handle,
  displayName: row.display_name
})

/** The caller a member grant speaks for, with the human whose access counts; undefined when none. */
export const memberCallerOf = (grant: AccessGrant): MemberCaller | undefined => {
  const { user } = grant
  if (grant.plane !== "member" || !user || (user.kind !== "agent" && user.kind !== "human")) return undefined
  const human = user.kind === "human" ? user : grant.steward
  if (!human) return undefined
  return {
    user: { ...principalOf(user, user.kind), configuration: user.configuration },
    human: principalOf(human, "human"),
    credential: { publicId: grant.credential.public_id, expiresAt: grant.credential.expires_at }
  }
}

export const MemberAuthenticationLive = Layer.effect(
  MemberAuthentication,
  Effect.gen(function* () {
    const credentials = yield* Credentials
    // The token is read by the plane's own RFC 6750 rule (presentedGrant), not the decoded credential.
    return MemberAuthentication.of({
      member_bearer: (httpEffect) =>
        Effect.gen(function* () {
          const presented = yield* presentedGrant(credentials)
          if (presented._tag === "Refused") return presented.answer
          const caller = memberCallerOf(presented.grant)
          if (!caller) return bearerRefusal(true)
          return yield* httpEffect.pipe(
            Effect.provideService(CurrentMemberCaller, caller),
            Effect.provideService(CallerIdentity, { key: `user:${caller.user.id}` })
          )
        })
    })
  })
)
