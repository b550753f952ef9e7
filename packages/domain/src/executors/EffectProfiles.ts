// What an announced tool's effect profile says of a call whose claim lapsed (runs supplement,
// the expiry rule): a replayable call settles timed_out, any other claimed one uncertain.

/** read_only or pure, or intrinsically idempotent: running the call again changes nothing more. */
export const replayable = (profile: { readonly kind?: unknown; readonly idempotency?: unknown }): boolean =>
  profile.kind === "read_only" || profile.kind === "pure" || profile.idempotency === "intrinsic"
