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
