// The message runner: delivers told messages after the step (or command) that wrote them
// committed. It leases each receiver's oldest pending message (FOR UPDATE SKIP LOCKED, so nodes
// never share one) and hands it to the receiver's mailbox; the receiving step settles it in its
// own transaction, so a repeated delivery is dropped. A message its receiver refuses is recorded
// as rejected; one whose receiver is quarantined, or does not exist yet, waits with backoff (a
// receiver still absent after a day rejects it). A lease is short and renewed while its delivery
// runs (the receiver's mailbox may be busy), so a message whose runner died is delivered again
// within `lease` of the death. Settled messages are kept 30 days.

import { EventBus } from "@troupe/storage/EventBus"
import * as Messages from "@troupe/storage/repositories/ActorMessages"
import { Clock, Context, Duration, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { ActorHost, type DeliveryResult } from "./ActorHost.ts"
import { jobBackoff } from "./JobRunner.ts"
import { hourlyReaper, runnerLoop } from "./RunnerLoop.ts"
import { RunnerSignals } from "./Signals.ts"

const batch = 32
/** How long a lease lasts unless renewed: the longest a dead runner's message waits to be delivered. */
const lease = Duration.seconds(15)
/** A message being delivered has its lease renewed this often. */
const renewEvery = Duration.seconds(5)
/** How long a message waits for a receiver that does not exist before it is rejected. */
export const absentReceiverPatience = Duration.hours(24)
const retention = Duration.days(30)

/** Bus channel: what became of a delivery attempt. */
export const messageChannel = "troupe_actor_messages"

export interface MessageNotice {
  readonly kind: string
  readonly actorId: string
  readonly message: string
  readonly outcome: DeliveryResult
}

export class MessageRunner extends Context.Service<
  MessageRunner,
  {
    /** Delivers every message ready now; answers how many delivery attempts were made. */
    readonly runReady: Effect.Effect<number>
    /** Deletes messages settled more than 30 days ago; answers how many went. */
    readonly reap: Effect.Effect<number>
  }
>()("@troupe/actors/MessageRunner") {
  static readonly layer = Layer.effect(
    MessageRunner,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const host = yield* ActorHost
      const signals = yield* RunnerSignals
      const bus = yield* EventBus
      const db = <A, E>(effect: Effect.Effect<A, E, SqlClient>) =>
        effect.pipe(Effect.orDie, Effect.provideService(SqlClient, sql))
      const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

      /** A waiting message is tried again later, or rejected once its receiver stayed absent too long. */
      const wait = (message: Messages.MessageRow, outcome: "absent" | "quarantined") =>
        Effect.gen(function* () {
          const at = yield* now
          if (
            outcome === "absent" &&
            at.getTime() - message.created_at.getTime() >= Duration.toMillis(absentReceiverPatience)
          ) {
            const reason = `no actor ${message.to_kind} ${message.to_actor_id}`
            yield* db(Messages.settleMessage(message.id, { _tag: "Rejected", reason }, at))
            return "rejected" as const
          }
          const reason =
            outcome === "absent"
              ? `waiting for actor ${message.to_kind} ${message.to_actor_id} to exist`
              : "waiting: the receiver is quarantined"
          const retryAt = new Date(at.getTime() + Duration.toMillis(jobBackoff(message.attempts)))
          yield* db(Messages.retryMessageLater(message.id, retryAt, reason))
          return outcome
        })

      const renewLease = (message: Messages.MessageRow) =>
        Effect.gen(function* () {
          const at = yield* now
          yield* db(Messages.renewMessageLease(message.id, new Date(at.getTime() + Duration.toMillis(lease))))
        }).pipe(Effect.delay(renewEvery), Effect.forever)

      const deliverOne = (message: Messages.MessageRow) =>
        Effect.gen(function* () {
          yield* Effect.forkScoped(renewLease(message))
          const delivered = yield* host.deliver({ _tag: "Message", message }, message.event)
          const outcome =
            delivered === "absent" || delivered === "quarantined" ? yield* wait(message, delivered) : delivered
          yield* bus.publish(
            messageChannel,
            JSON.stringify({
              kind: message.to_kind,
              actorId: message.to_actor_id,
              message: String(message.id),
              outcome
            } satisfies MessageNotice)
          )
        }).pipe(Effect.scoped)

      const runReady = Effect.gen(function* () {
        let attempts = 0
        for (;;) {
          const at = yield* now
          const ready = yield* db(Messages.leaseMessages(at, new Date(at.getTime() + Duration.toMillis(lease)), batch))
          yield* Effect.forEach(ready, deliverOne, { concurrency: 8, discard: true })
          attempts += ready.length
          if (ready.length < batch) return attempts
        }
      })

      const reap = Effect.gen(function* () {
        const at = yield* now
        return yield* db(Messages.reapMessages(new Date(at.getTime() - Duration.toMillis(retention))))
      })

      yield* runnerLoop("message runner", runReady, signals.messages, db(Messages.nextMessageDue))
      yield* hourlyReaper("message reaper", reap)
      return MessageRunner.of({ runReady, reap })
    })
  )
}
