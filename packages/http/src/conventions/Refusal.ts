// What a refusal looks like at each door. The RFC 6749 shape `{error, error_description}` on
// /oauth/* (SUPPLEMENT), `400 bad_request` for an unreadable request at the session door (spec;
// a readable body holding a value PostgreSQL cannot store is `401 invalid_credentials` there),
// the `{error: {code, message}}` envelope everywhere else. Also the failure of a request refused
// for its form before any route judges it (a target or body that cannot be read faithfully).
import { errors } from "@troupe/contracts/Errors"
import { Data } from "effect"

/**
 * The code of every 503 a client may get while Troupe cannot serve it yet (start-up, shut-down, no
 * database, work moving between nodes), and the Retry-After it carries.
 */
export const notReadyCode = "not_ready"
export const retryAfterSeconds = 1

/** A request whose target or body cannot be read faithfully: never rewritten, refused. */
export class RequestRefused extends Data.TaggedError("RequestRefused")<{
  readonly status: 400 | 415
  readonly code: "parameter_invalid" | "unsupported_media_type"
  readonly message: string
  /** A JSON value (or member name) holding U+0000 or a lone surrogate, the body itself well-formed. */
  readonly unstorableValue?: boolean
}> {}

export type Door = "oauth" | "session" | "api"

export const doorOf = (method: string, path: string): Door =>
  path.startsWith("/oauth/") ? "oauth" : method === "POST" && path === "/api/v1/session" ? "session" : "api"

/** A refusal in the platform's terms, before its door shapes it. */
export interface Refusal {
  readonly status: number
  readonly code: string
  readonly message: string
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly unstorableValue?: boolean | undefined
}

export interface ShapedRefusal {
  readonly status: number
  readonly body: unknown
  readonly headers: Readonly<Record<string, string>>
}

/** A 400 or 415 is a request the door cannot read: malformed, in the door's own words. */
const unreadable = (status: number) => status === 400 || status === 415

export const shape = (door: Door, refusal: Refusal): ShapedRefusal => {
  const headers = refusal.headers ?? {}
  switch (door) {
    case "oauth": {
      const malformed = unreadable(refusal.status)
      return {
        status: malformed ? 400 : refusal.status,
        body: { error: malformed ? "invalid_request" : refusal.code, error_description: refusal.message },
        headers: { ...headers, "cache-control": "no-store", pragma: "no-cache" }
      }
    }
    case "session":
      // Spec "Platform plane": malformed credential values, a null byte included, are the same
      // 401 invalid_credentials as a wrong password.
      if (refusal.unstorableValue === true) {
        return { status: 401, body: { error: errors.invalidCredentials().error }, headers }
      }
      return unreadable(refusal.status)
        ? { status: 400, body: { error: { code: "bad_request", message: refusal.message } }, headers }
        : { status: refusal.status, body: { error: { code: refusal.code, message: refusal.message } }, headers }
    case "api":
      return { status: refusal.status, body: { error: { code: refusal.code, message: refusal.message } }, headers }
  }
}
