// Opaque bearer secrets: `<prefix><lookup><separator><secret>`. Only the lookup id and a salted
// SHA-256 digest of the secret are stored; the raw token is shown once. A fast hash is right:
// the secret is 256 random bits, there is no dictionary to guard against.
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"

export interface MintedToken {
  readonly token: string
  readonly lookup: string
  readonly salt: Uint8Array
  readonly digest: Uint8Array
}

export interface TokenFormat {
  readonly prefix: string
  readonly separator: string
}

/** API access tokens (1209600 s), refresh tokens, device codes; sessions keep "lookup.secret". */
export const accessTokenFormat: TokenFormat = { prefix: "sk-svc-api-v1-", separator: "" }
export const refreshTokenFormat: TokenFormat = { prefix: "rt-svc-api-v1-", separator: "" }
export const deviceCodeFormat: TokenFormat = { prefix: "dc-svc-v1-", separator: "" }
export const sessionTokenFormat: TokenFormat = { prefix: "sk-svc-session-v1-", separator: "." }

const lookupLength = 16
const secretLength = 43

const digestOf = (salt: Uint8Array, secret: string) => createHash("sha256").update(salt).update(secret).digest()

export const mintToken = (format: TokenFormat): MintedToken => {
  const lookup = randomBytes(12).toString("base64url")
  const secret = randomBytes(32).toString("base64url")
  const salt = randomBytes(16)
  return {
    token: `${format.prefix}${lookup}${format.separator}${secret}`,
    lookup,
    salt,
    digest: digestOf(salt, secret)
  }
}

/** Splits a presented token into lookup id and secret, or undefined when it is not of the format. */
export const parseToken = (format: TokenFormat, token: string) => {
  if (!token.startsWith(format.prefix)) return undefined
  const rest = token.slice(format.prefix.length)
  if (rest.length !== lookupLength + format.separator.length + secretLength) return undefined
  if (format.separator !== "" && rest[lookupLength] !== format.separator) return undefined
  const lookup = rest.slice(0, lookupLength)
  const secret = rest.slice(lookupLength + format.separator.length)
  const alphabet = /^[A-Za-z0-9_-]+$/
  return alphabet.test(lookup) && alphabet.test(secret) ? { lookup, secret } : undefined
}

export const secretMatches = (secret: string, salt: Uint8Array, digest: Uint8Array): boolean => {
  const actual = digestOf(salt, secret)
  return actual.length === digest.length && timingSafeEqual(actual, digest)
}
