// Effect requests of the API session machine, carried out by its binding in the step's
// transaction, and what it narrates.
export const apiSessionEffects = {
  /** Mark the session row revoked: the bearer stops authenticating with this commit. */
  recordRevoked: "session.recordRevoked",
  /** Mark the session row expired. */
  recordExpired: "session.recordExpired"
} as const

export type ApiSessionEmitted = { readonly type: "session.revoked" } | { readonly type: "session.expired" }

/** Sessions live 30 days from issuance, never extended. */
export const sessionLifeMillis = 30 * 24 * 60 * 60 * 1000
