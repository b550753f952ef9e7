// Where an actor steps. Every actor lives on exactly one node at a time: the node holding its
// shard (effect/cluster, Cluster.ts) steps it in its own mailbox; a caller on another node hands
// the event to that node and waits for the outcome. A node alone (the embedded database, tests)
// holds every actor. Snapshot seq fencing stays the safety net when ownership moves mid-step.
import { Context, type Effect, Layer } from "effect"
import type { ActorEvent } from "./Binding.ts"
import type { ActorNotFound, ActorQuarantined, InvalidMessage } from "./Errors.ts"

/** A step's outcome as any node answers it (ActorHost's StepOutcome). */
export type PlacedOutcome =
  | {
      readonly _tag: "Accepted"
      readonly state: string
      readonly status: string
      readonly seq: bigint
      readonly replies: Readonly<Record<string, unknown>>
    }
  | { readonly _tag: "Vetoed"; readonly state: string; readonly reason: string }
  | { readonly _tag: "Rejected"; readonly state: string; readonly accepts: ReadonlyArray<string> }

/** What the owner of the actor made of a delivery (ActorHost's DeliveryResult). */
export type PlacedDelivery = "applied" | "rejected" | "stale" | "absent" | "quarantined"

/** A timer, job report or told message, named by what its owner needs to settle it. */
export type DeliveryRef =
  | {
      readonly _tag: "Timer"
      readonly timer: {
        readonly id: bigint
        readonly kind: string
        readonly actor_id: string
        readonly set_at_seq: bigint
      }
    }
  | { readonly _tag: "Job"; readonly job: { readonly id: bigint; readonly kind: string; readonly actor_id: string } }
  | {
      readonly _tag: "Message"
      readonly message: {
        readonly id: bigint
        readonly to_kind: string
        readonly to_actor_id: string
        readonly from_kind: string | null
        readonly from_actor_id: string | null
        readonly traceparent: string | null
      }
    }

/** The actor a delivery is for: its kind and id. */
export const deliveryTarget = (delivery: DeliveryRef): readonly [kind: string, actorId: string] =>
  delivery._tag === "Timer"
    ? [delivery.timer.kind, delivery.timer.actor_id]
    : delivery._tag === "Job"
      ? [delivery.job.kind, delivery.job.actor_id]
      : [delivery.message.to_kind, delivery.message.to_actor_id]

export class Placement extends Context.Service<
  Placement,
  {
    /** Whether this node holds the actor now (the step runs here). */
    readonly here: (kind: string, actorId: string) => boolean
    /** Steps the actor on the node that holds it. */
    readonly send: (
      kind: string,
      actorId: string,
      event: ActorEvent
    ) => Effect.Effect<PlacedOutcome, ActorNotFound | ActorQuarantined | InvalidMessage>
    /** Delivers a timer, job report or told message on the node that holds its actor. */
    readonly deliver: (delivery: DeliveryRef, event: unknown) => Effect.Effect<PlacedDelivery>
  }
>()("@troupe/actors/Placement") {
  /** One node holds every actor: nothing is ever handed on. */
  static readonly alone = Layer.succeed(
    Placement,
    Placement.of({
      here: () => true,
      send: (kind) => {
        throw new Error(`a lone node holds every actor, so no ${kind} step is handed on`)
      },
      deliver: (delivery) => {
        throw new Error(`a lone node holds every actor, so no ${delivery._tag} is handed on`)
      }
    })
  )
}
