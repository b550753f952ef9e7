// What pages and OAuth need from the deployment: the setup secret, Secure cookies, the public URL.
import type { RedirectPolicy } from "@troupe/domain/connections/RedirectPolicy"
import { Context, type Redacted } from "effect"

export class WebConfig extends Context.Service<
  WebConfig,
  {
    readonly setupSecret: Redacted.Redacted<string> | undefined
    /** True when the public base URL is https: cookies get the Secure attribute. */
    readonly secureCookies: boolean
    /** The address clients use; absolute links (verification URIs, metadata) are built from it. */
    readonly publicBaseUrl: URL
    /** Where the application client may be sent back to. */
    readonly redirectPolicy: RedirectPolicy
  }
>()("@troupe/http/web/WebConfig") {}

/**
 * The absolute URL of one of the server's own paths, under the public base URL's own path (a
 * deployment behind a proxy that strips a prefix: https://example.com/troupe + /oauth/device is
 * https://example.com/troupe/oauth/device, where `new URL("/oauth/device", base)` would drop it).
 */
export const publicUrl = (publicBaseUrl: URL, path: `/${string}`) => {
  const url = new URL(publicBaseUrl)
  url.search = ""
  url.hash = ""
  url.pathname = `${url.pathname.replace(/\/+$/, "")}${path}`
  return url
}
