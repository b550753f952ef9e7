// Events the API session machine accepts.
export type ApiSessionEvent =
  /** DELETE /api/v1/session with the session's own bearer (or sign-out of a browser session). */
  | { readonly type: "session.revoke" }
  /** The 30-day timer set at issuance. */
  | { readonly type: "session.expire" }
