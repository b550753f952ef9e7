// The member a command runs for, resolved once per request by the plane's authentication: the
// member itself and the human whose access counts (a human itself; an agent, its steward).
// Commands take it instead of reading the caller's rows again.

/** A principal as commands need it. */
export interface Principal {
  readonly id: bigint
  readonly accountId: bigint
  readonly kind: "agent" | "human"
}

export interface Caller {
  /** Who the credential speaks for, with its declared configuration (null until declared). */
  readonly user: Principal & { readonly configuration: unknown }
  /** Whose access counts: a human itself, an agent's active steward. */
  readonly human: Principal
}
