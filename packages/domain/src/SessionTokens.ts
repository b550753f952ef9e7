// API and browser session tokens: `sk-svc-session-v1-<lookup>.<secret>`. Only the lookup id and
// a salted SHA-256 digest of the secret are stored; the raw token is shown once.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

export const sessionTokenPrefix = "sk-svc-session-v1-"

export interface MintedSessionToken {
  readonly token: string
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
}

const digestOf = (salt: Uint8Array, secret: string) => createHash("sha256").update(salt).update(secret).digest()

export const mintSessionToken = (): MintedSessionToken => {
  const lookup = randomBytes(12).toString("base64url")
  const secret = randomBytes(32).toString("base64url")
  const salt = randomBytes(16)
  return { token: `${sessionTokenPrefix}${lookup}.${secret}`, lookup, salt, digest: digestOf(salt, secret) }
}

const tokenPattern = /^sk-svc-session-v1-([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{43})$/

/** Splits a presented token into its lookup id and secret, or undefined when it is not one. */
export const parseSessionToken = (token: string): { readonly lookup: string; readonly secret: string } | undefined => {
  const match = tokenPattern.exec(token)
  return match ? { lookup: match[1]!, secret: match[2]! } : undefined
}

export const sessionSecretMatches = (secret: string, salt: Uint8Array, digest: Uint8Array): boolean => {
  const actual = digestOf(salt, secret)
  return actual.length === digest.length && timingSafeEqual(actual, digest)
}
