// The member-plane caller: an agent (or a human with a member personal access token) behind an
// /agent_api/v1 request.
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { Unauthorized } from "../Errors.ts"
import type { CallerIdentity } from "../Idempotency.ts"
import { memberBearer } from "../Security.ts"

export interface MemberCaller {
  readonly user: {
    readonly id: bigint
    readonly publicId: string
    readonly kind: "agent" | "human"
    readonly role: "owner" | "admin" | "member"
    readonly handle: string
    readonly displayName: string
  }
  readonly credential: { readonly publicId: string; readonly expiresAt: Date | null }
}

export class CurrentMemberCaller extends Context.Service<CurrentMemberCaller, MemberCaller>()(
  "@troupe/contracts/member/CurrentMemberCaller"
) {}

/** Member plane: a member access token; transport and platform credentials are refused. */
export class MemberAuthentication extends HttpApiMiddleware.Service<
  MemberAuthentication,
  { provides: CurrentMemberCaller | CallerIdentity }
>()("@troupe/contracts/member/MemberAuthentication", {
  error: Unauthorized,
  security: { member_bearer: memberBearer }
}) {}
