// The member a command runs for, resolved once per request by the plane's authentication: the
// member itself and the human whose access counts (a human itself; an agent, its steward).
// Commands take it instead of reading the caller's rows again (an agent's steward is `human`).

/** A principal as commands need it. */
export interface Principal {
  readonly id: bigint
  readonly accountId: bigint
  readonly kind: "agent" | "human"
}

/** The member as its answers show it (what a people row would give for it). */
export interface Shown {
  readonly publicId: string
  readonly handle: string
  readonly displayName: string
}

export interface Caller {
  /** Who the credential speaks for, as shown, with its declared configuration (null until declared). */
  readonly user: Principal & Shown & { readonly configuration: unknown }
  /** Whose access counts: a human itself, an agent's active steward. */
  readonly human: Principal
}
