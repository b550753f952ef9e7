// Actors across nodes on effect/cluster: each actor kind is an entity type whose entity id is the
// actor id, so an actor lives on the node holding its shard (shards are locked in the shared
// PostgreSQL and move when a node leaves or dies). A node steps the actors it holds itself and
// hands every other step and delivery to the holder (`Step` and `Deliver`, volatile: the work they
// carry is already durable in our own tables — a timer, job or message row, or an HTTP request the
// caller retries). Events, outcomes and deliveries cross as V8 structured clones (node:v8): they
// are in-process values (Dates, bigints) every node already validated against the same schemas.
import { deserialize, serialize } from "node:v8"
import { Duration, Effect, Layer, Schedule, Schema } from "effect"
import { Entity, EntityId, Sharding } from "effect/cluster"
import { Rpc } from "effect/rpc"
import { ActorHost } from "./ActorHost.ts"
import { type ActorEvent, Bindings } from "./Binding.ts"
import { ActorNotFound, ActorQuarantined, ActorUnreachable, InvalidMessage } from "./Errors.ts"
import { type DeliveryRef, deliveryTarget, type PlacedDelivery, type PlacedOutcome, Placement } from "./Placement.ts"

const Bytes = Schema.Uint8Array

const Step = Rpc.make("Step", {
  payload: { event: Bytes },
  success: Bytes,
  error: Schema.Union([ActorNotFound, ActorQuarantined, InvalidMessage])
})

const Deliver = Rpc.make("Deliver", {
  payload: { delivery: Bytes, event: Bytes },
  success: Schema.Literals(["applied", "rejected", "stale", "absent", "quarantined"])
})

/** The entity type of an actor kind. */
const entityOf = (kind: string) => Entity.make(kind, [Step, Deliver])

const pack = (value: unknown): Uint8Array => serialize(value)
const unpack = <A>(bytes: Uint8Array): A => deserialize(bytes) as A

/** How long a hand-off keeps trying while shards move (a node died, or joined). */
const handOffPatience = Duration.seconds(30)

/** What the actor's host answers, as opposed to what the cluster answers about reaching it. */
const isActorRefusal = (error: unknown): error is ActorNotFound | ActorQuarantined | InvalidMessage =>
  error instanceof ActorNotFound || error instanceof ActorQuarantined || error instanceof InvalidMessage

/** Retries what the cluster answers while an actor's shard has no reachable holder. */
const untilPlaced = <A, E>(effect: Effect.Effect<A, E>) =>
  effect.pipe(
    Effect.retry({
      while: (error) => !isActorRefusal(error),
      schedule: Schedule.max([Schedule.spaced("200 millis"), Schedule.during(handOffPatience)])
    })
  )

/** Placement by the cluster: here when this node holds the actor's shard, else through its entity. */
export const clusterPlacement = Layer.effect(
  Placement,
  Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    const bindings = yield* Bindings
    const makeClient = (kind: string) => sharding.makeClient(entityOf(kind))
    const clients = new Map<string, Effect.Success<ReturnType<typeof makeClient>>>()
    const entities = new Map<string, ReturnType<typeof entityOf>>()
    for (const kind of bindings.keys()) {
      entities.set(kind, entityOf(kind))
      clients.set(kind, yield* makeClient(kind))
    }
    const clientOf = (kind: string) => {
      const client = clients.get(kind)
      if (!client) throw new Error(`no entity type for actor kind ${kind}`)
      return client
    }
    const here = (kind: string, actorId: string) => {
      const entity = entities.get(kind)
      if (!entity) return true
      const id = EntityId.make(actorId)
      return sharding.hasShardId(sharding.getShardId(id, entity.getShardGroup(id)))
    }
    return Placement.of({
      here,
      send: (kind, actorId, event) =>
        untilPlaced(clientOf(kind)(actorId).Step({ event: pack(event) })).pipe(
          Effect.map((bytes) => unpack<PlacedOutcome>(bytes)),
          Effect.catchIf(
            (error) => !isActorRefusal(error),
            () => Effect.die(new ActorUnreachable({ kind, actorId }))
          )
        ),
      deliver: (delivery, event) => {
        const [kind, actorId] = deliveryTarget(delivery)
        return untilPlaced(clientOf(kind)(actorId).Deliver({ delivery: pack(delivery), event: pack(event) })).pipe(
          Effect.map((result): PlacedDelivery => result),
          Effect.catch(() => Effect.die(new ActorUnreachable({ kind, actorId })))
        )
      }
    })
  })
)

/** Registers every actor kind as an entity whose steps this node's host runs. */
export const actorEntities = Layer.effectDiscard(
  Effect.gen(function* () {
    const sharding = yield* Sharding.Sharding
    const host = yield* ActorHost
    const bindings = yield* Bindings
    for (const kind of bindings.keys()) {
      yield* sharding.registerEntity(
        entityOf(kind),
        Effect.succeed({
          Step: (request: {
            readonly address: { readonly entityId: string }
            readonly payload: { readonly event: Uint8Array }
          }) =>
            host.sendHere(kind, request.address.entityId, unpack<ActorEvent>(request.payload.event)).pipe(
              Effect.map(pack),
              Effect.catchTag("UnknownKind", (error) => Effect.die(error))
            ),
          Deliver: (request: { readonly payload: { readonly delivery: Uint8Array; readonly event: Uint8Array } }) =>
            host.deliverHere(unpack<DeliveryRef>(request.payload.delivery), unpack<unknown>(request.payload.event))
        }),
        { concurrency: "unbounded" }
      )
    }
  })
)
