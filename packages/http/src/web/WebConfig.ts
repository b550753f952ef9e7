// What the HTML pages need from the deployment: the setup secret and whether cookies are Secure.
import { Context, type Redacted } from "effect"

export class WebConfig extends Context.Service<
  WebConfig,
  {
    readonly setupSecret: Redacted.Redacted<string> | undefined
    /** True when the public base URL is https: cookies get the Secure attribute. */
    readonly secureCookies: boolean
  }
>()("@troupe/http/web/WebConfig") {}
