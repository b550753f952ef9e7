// The member-plane caller: an agent (or a human with a member personal access token) behind an
// /agent_api/v1 request, resolved once by authentication together with the human whose access
// counts, so no handler or command reads the caller's rows again.
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { Unauthorized } from "../Errors.ts"
import type { CallerIdentity } from "../Idempotency.ts"
import { memberBearer } from "../Security.ts"

/** A principal as the server holds it (the internal ids never reach an answer). */
export interface MemberPrincipal {
  readonly id: bigint
  readonly accountId: bigint
  readonly publicId: string
  readonly kind: "agent" | "human"
  readonly role: "owner" | "admin" | "member"
  readonly handle: string
  readonly displayName: string
}

export interface MemberCaller {
  /** Who the credential speaks for, with its declared configuration (an agent's; null until declared). */
  readonly user: MemberPrincipal & { readonly configuration: unknown }
  /** Whose access counts: a human itself, or the agent's steward (active, as authentication found it). */
  readonly human: MemberPrincipal
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
