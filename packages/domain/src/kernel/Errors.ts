// Domain failures: what a rule refuses, independent of any transport. The http planes map each
// to the spec's status and code.
import { Schema } from "effect"

export class InvalidInput extends Schema.TaggedError<InvalidInput>()("InvalidInput", {
  field: Schema.String,
  message: Schema.String
}) {}

export class AlreadyInitialized extends Schema.TaggedError<AlreadyInitialized>()("AlreadyInitialized", {}) {}

export class NotInitialized extends Schema.TaggedError<NotInitialized>()("NotInitialized", {}) {}

export class EmailTaken extends Schema.TaggedError<EmailTaken>()("EmailTaken", {}) {}

export class HandleTaken extends Schema.TaggedError<HandleTaken>()("HandleTaken", { handle: Schema.String }) {}

export class InvalidCredentials extends Schema.TaggedError<InvalidCredentials>()("InvalidCredentials", {}) {}

export class Unauthenticated extends Schema.TaggedError<Unauthenticated>()("Unauthenticated", {}) {}

export class RateLimitExceeded extends Schema.TaggedError<RateLimitExceeded>()("RateLimitExceeded", {
  retryAfterSeconds: Schema.Int
}) {}
