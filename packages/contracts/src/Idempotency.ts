// Idempotent creates: endpoints that carry this middleware require an Idempotency-Key header,
// replay the original acceptance for a repeat, and refuse the same key with another request.
import { Context } from "effect"
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

export class Idempotent extends HttpApiMiddleware.Service<Idempotent, { requires: CallerIdentity }>()(
  "@troupe/contracts/Idempotent",
  { error: [BadRequest, Conflict, RateLimitedResponse] }
) {}
