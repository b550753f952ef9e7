// What sending to an actor can answer besides a step outcome.
import { Schema } from "effect"

export class ActorNotFound extends Schema.TaggedError<ActorNotFound>()("ActorNotFound", {
  kind: Schema.String,
  actorId: Schema.String
}) {}

export class ActorExists extends Schema.TaggedError<ActorExists>()("ActorExists", {
  kind: Schema.String,
  actorId: Schema.String
}) {}

/** The actor failed the same event repeatedly and was set aside for an operator. */
export class ActorQuarantined extends Schema.TaggedError<ActorQuarantined>()("ActorQuarantined", {
  kind: Schema.String,
  actorId: Schema.String
}) {}

export class UnknownKind extends Schema.TaggedError<UnknownKind>()("UnknownKind", { kind: Schema.String }) {}

/** An event or input that is not of the shape the machine's schema declares. */
export class InvalidMessage extends Schema.TaggedError<InvalidMessage>()("InvalidMessage", {
  kind: Schema.String,
  message: Schema.String
}) {}

/**
 * No node could be reached to step the actor while its shard moved (the hand-off's patience ran
 * out): a defect of the moment, answered 503 with Retry-After, never a client's fault.
 */
export class ActorUnreachable extends Schema.TaggedError<ActorUnreachable>()("ActorUnreachable", {
  kind: Schema.String,
  actorId: Schema.String
}) {}
