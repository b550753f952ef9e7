// Which callbacks the application client may be sent to (spec "Application login" 5 and
// "Deployment settings"). By default: http or https at path /auth/callback on loopback,
// localhost, private IPv4 or IPv6 unique-local hosts, any valid port. SERVICE_OAUTH_REDIRECT_URIS
// replaces that with an exact list; SERVICE_OAUTH_ALLOW_HTTP then permits plain-http entries
// outside the local and private ranges. Matching is always exact.
import { isIP } from "node:net"

export interface RedirectPolicy {
  /** The exact allowed callbacks, or undefined for the default local/private policy. */
  readonly allowed: ReadonlyArray<string> | undefined
  readonly allowHttp: boolean
}

const privateIPv4 = (host: string) => {
  const [a, b] = host.split(".").map(Number) as [number, number]
  return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)
}

const privateIPv6 = (host: string) => {
  const bare = host.replace(/^\[|\]$/g, "").toLowerCase()
  return bare === "::1" || /^f[cd][0-9a-f]{2}:/.test(bare)
}

/** Loopback, localhost, private IPv4 or IPv6 unique-local. */
export const localOrPrivate = (url: URL) => {
  const host = url.hostname
  if (host === "localhost") return true
  const bare = host.replace(/^\[|\]$/g, "")
  if (isIP(bare) === 4) return privateIPv4(bare)
  if (isIP(bare) === 6) return privateIPv6(bare)
  return false
}

const parse = (value: string) => {
  try {
    const url = new URL(value)
    return url.hash === "" && !url.username && !url.password ? url : undefined
  } catch {
    return undefined
  }
}

export const redirectAllowed = (policy: RedirectPolicy, redirectUri: string): boolean => {
  const url = parse(redirectUri)
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) return false
  if (policy.allowed !== undefined) {
    if (!policy.allowed.includes(redirectUri)) return false
    return url.protocol === "https:" || localOrPrivate(url) || policy.allowHttp
  }
  return url.pathname === "/auth/callback" && url.search === "" && localOrPrivate(url)
}
