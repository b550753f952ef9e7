// API and browser session tokens: `sk-svc-session-v1-<lookup>.<secret>` (see OpaqueTokens).
import { type MintedToken, mintToken, parseToken, sessionTokenFormat } from "./OpaqueTokens.ts"

export { secretMatches as sessionSecretMatches } from "./OpaqueTokens.ts"

export type MintedSessionToken = MintedToken

export const mintSessionToken = (): MintedSessionToken => mintToken(sessionTokenFormat)

export const parseSessionToken = (token: string) => parseToken(sessionTokenFormat, token)
