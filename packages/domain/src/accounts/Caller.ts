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

/** A human as the caller of domain commands (a signed-in person, a bench's owner): its own access counts. */
export const callerOfHuman = (user: {
  readonly id: bigint
  readonly account_id: bigint
  readonly public_id: string
  readonly handle: string
  readonly display_name: string
}): Caller => ({
  user: {
    id: user.id,
    accountId: user.account_id,
    kind: "human",
    publicId: user.public_id,
    handle: user.handle,
    displayName: user.display_name,
    configuration: null
  },
  human: { id: user.id, accountId: user.account_id, kind: "human" }
})

/**
 * A member of an account as the caller of domain commands made on its behalf (a run's creator, a
 * kernel call's author): a human counts itself, an agent its steward.
 */
export const callerOfUser = (
  user: {
    readonly id: bigint
    readonly kind: "human" | "agent"
    readonly public_id: string
    readonly handle: string
    readonly display_name: string
    readonly configuration: unknown
    readonly steward_id: bigint | null
  },
  accountId: bigint
): Caller => ({
  user: {
    id: user.id,
    accountId,
    kind: user.kind,
    publicId: user.public_id,
    handle: user.handle,
    displayName: user.display_name,
    configuration: user.configuration
  },
  human: { id: user.steward_id ?? user.id, accountId, kind: "human" }
})
