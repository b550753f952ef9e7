// Idempotent creates: endpoints that carry this middleware require an Idempotency-Key header,
// replay the original acceptance for a repeat, and refuse the same key with another request.
import { Context, Schema } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { BadRequest, Conflict, RateLimitedResponse } from "./Errors.ts"

/** A stable name of the authenticated caller that owns idempotency keys, provided by each plane. */
export class CallerIdentity extends Context.Service<CallerIdentity, { readonly key: string }>()(
  "@troupe/contracts/CallerIdentity"
) {}

/** Largest Idempotency-Key in bytes for an endpoint (default 255); annotate endpoints that differ. */
export const IdempotencyKeyMaxBytes = Context.Reference<number>("@troupe/contracts/IdempotencyKeyMaxBytes", {
  defaultValue: () => 255
})

/**
 * The scope an endpoint's keys are reserved in, when not its own method and path: endpoints that
 * share one (budget writes) answer a key sent again to another target or route with
 * idempotency_envelope_mismatch.
 */
export const IdempotencyScope = Context.Reference<string | undefined>("@troupe/contracts/IdempotencyScope", {
  defaultValue: () => undefined
})

/**
 * An endpoint annotated true answers a replay with the resource as it stands now, at 200, instead
 * of the stored acceptance (inference requests: "replay 200 with the STANDING projection"). Its
 * handler then runs again with `ReplayedAcceptance`, the stored answer, and reads the resource it
 * names rather than creating one.
 */
export const ReplaysStanding = Context.Reference<boolean>("@troupe/contracts/ReplaysStanding", {
  defaultValue: () => false
})

/** The stored acceptance a standing replay re-reads (its body as the first request answered it). */
export class ReplayedAcceptance extends Context.Service<ReplayedAcceptance, { readonly body: string }>()(
  "@troupe/contracts/ReplayedAcceptance"
) {}

export class Idempotent extends HttpApiMiddleware.Service<Idempotent, { requires: CallerIdentity }>()(
  "@troupe/contracts/Idempotent",
  { error: [BadRequest, Conflict, RateLimitedResponse] }
) {}

/**
 * The Idempotency-Key header, declared by every endpoint that takes one (`Idempotent` or a door
 * that requires the key without keeping a receipt) so that OpenAPI lists it. The middleware
 * judges the key before the header is decoded.
 */
export const IdempotencyKeyHeader = {
  "idempotency-key": Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(255)).annotate({
    description:
      "Required, 1 to 255 bytes chosen by the caller; missing or blank is 400 idempotency_key_required. " +
      "A route that keeps receipts (all but the profile's store entries) replays its first acceptance " +
      "to a repeat within 24 hours (Idempotency-Replayed: true) and answers 409 " +
      "idempotency_envelope_mismatch to the same key with another request."
  })
}
