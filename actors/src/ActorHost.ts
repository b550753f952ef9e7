// The actor host: one mailbox per actor (events processed one at a time on this node), and the
// step: transition, then its writes: the binding's row handlers (their rows, told messages), then
// ONE statement (ActorSteps.ts) with the seq-fenced snapshot (its context's parts as rows, only
// the elements that changed), timer rows, job rows, outbox items, the journal row and the bus
// notice (NOTIFYed at commit, or queued for Notices.ts when other steps are committing). A step
// with no row handler and no delivery to settle is that statement alone, atomic without a
// transaction; the others commit in a transaction (under `groupCommit`, GroupCommit.ts, ready
// steps of other actors share a statement or a transaction). After commit, wake the runners, then
// reply. A seq conflict (another writer) reloads and retries; a failing step is retried from the
// last committed snapshot with backoff, then quarantined with a dead letter. Timers, job reports
// and told messages arrive as deliveries, each settled in the step that applies it (so a repeat is
// dropped).

import { type BusMessage, EventBus, StepMessages } from "@troupe/storage/EventBus"
import { newPublicId } from "@troupe/storage/Ids"
import * as Messages from "@troupe/storage/repositories/ActorMessages"
import * as Steps from "@troupe/storage/repositories/ActorSteps"
import * as Repo from "@troupe/storage/repositories/Actors"
import { Cause, Clock, Context, Duration, Effect, Layer, Queue, Schema, Semaphore } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { AnyMachineSnapshot } from "xstate"
import {
  type ActorEvent,
  type Binding,
  Bindings,
  type EventOf,
  type InputOf,
  type RepliesOf,
  type StepInfo,
  TransactionalActors,
  Veto
} from "./Binding.ts"
import { ActorExists, ActorNotFound, ActorQuarantined, InvalidMessage, UnknownKind } from "./Errors.ts"
import { type GroupCommitOptions, makeGroupCommit } from "./GroupCommit.ts"
import { noticeSender } from "./Notices.ts"
import { type DeliveryRef, deliveryTarget, Placement } from "./Placement.ts"
import { netTimers, planActions, type StepPlan, stateText, UnboundAction } from "./Plan.ts"
import { RunnerSignals } from "./Signals.ts"
import { initialTransitionOf, persistedOf, restore, splitParts, transitionOf } from "./Snapshots.ts"
import { Supervision } from "./Supervision.ts"
import { currentTraceparent, traceCreate, traceStep } from "./Tracing.ts"

export type StepOutcome<Replies = Readonly<Record<string, unknown>>> =
  | {
      readonly _tag: "Accepted"
      readonly state: string
      readonly status: string
      readonly seq: bigint
      /** What the step's row handlers answered, by action name. */
      readonly replies: Replies
    }
  | { readonly _tag: "Vetoed"; readonly state: string; readonly reason: string }
  | { readonly _tag: "Rejected"; readonly state: string; readonly accepts: ReadonlyArray<string> }

/** The bus channel of committed steps (any actor's; its outbox stream follows from its kind). */
export const stepChannel = "troupe_actor_steps"

export interface StepNotice {
  readonly kind: string
  readonly actorId: string
  readonly seq: string
  readonly state: string
}

/**
 * Wakes the readers of an actor's stream when another actor's step appended to it (a hosted run
 * narrating on its conversation's feed); published on that step's commit, it names no step of the
 * actor's own (seq "0" is after no cursor, state "" is no state).
 */
export const streamAppendedNotice = (kind: string, actorId: string) => ({
  channel: stepChannel,
  payload: JSON.stringify({ kind, actorId, seq: "0", state: "" } satisfies StepNotice)
})

class SeqConflict extends Schema.TaggedError<SeqConflict>()("SeqConflict", {}) {}
/** A timer or job report that another delivery already consumed. */
class StaleDelivery extends Schema.TaggedError<StaleDelivery>()("StaleDelivery", {}) {}

/** A timer, a job's report or a told message, by what its actor's node needs to settle it. */
export type Delivery = DeliveryRef

/**
 * What became of a delivery: applied by a step, refused by the actor (recorded, never retried),
 * already settled by an earlier delivery, or left waiting for an actor that does not exist yet or
 * is quarantined (only a message waits; a timer or job report to such an actor is dropped).
 */
export type DeliveryResult = "applied" | "rejected" | "stale" | "absent" | "quarantined"

/** How a step settles the delivery it applies (or refuses) in its own transaction. */
type Verdict =
  | { readonly _tag: "Delivered"; readonly seq: bigint }
  | { readonly _tag: "Rejected"; readonly reason: string }

interface Sender {
  readonly kind: string
  readonly actorId: string
  readonly seq: bigint
}

export interface HostOptions {
  /** Attempts of one event before the actor is quarantined. */
  readonly maxAttempts: number
  /** Backoff before the first retry of a failed step (doubles each time). */
  readonly retryBackoff: Duration.Input
  /** Live actors idle this long are dropped from memory (they reload from their snapshot). */
  readonly idleTimeToLive: Duration.Input
  /** Commit ready steps of different actors together (GroupCommit.ts); off when absent. */
  readonly groupCommit?: GroupCommitOptions | undefined
}

export const defaultHostOptions: HostOptions = {
  maxAttempts: 3,
  retryBackoff: "25 millis",
  idleTimeToLive: "5 minutes"
}

interface Live {
  /** The row, its snapshot whole (its context's parts in it). */
  readonly row: Repo.SnapshotRow
  /** The row's snapshot resolved against the machine, once a step has needed it. */
  resolved: AnyMachineSnapshot | undefined
  /** Its context's parts as their rows hold them (what the next step's writes are judged against). */
  readonly parts: Repo.Parts
  lastUsed: number
}

const acceptedEvents = (snapshot: AnyMachineSnapshot): ReadonlyArray<string> =>
  [
    ...new Set(
      (snapshot as unknown as { _nodes: Array<{ ownEvents: Array<string> }> })._nodes.flatMap((n) => n.ownEvents)
    )
  ]
    .filter((type) => !type.startsWith("xstate."))
    .sort()

/** Decodes an input against the machine's schema. */
const validate = (kind: string, schema: Schema.Decoder<unknown>, value: unknown) =>
  Schema.decodeUnknownEffect(schema)(value).pipe(
    Effect.mapError((error) => new InvalidMessage({ kind, message: error.message }))
  )

const isActorEvent = (value: unknown): value is ActorEvent =>
  typeof value === "object" && value !== null && "type" in value && typeof value.type === "string"

/** Decodes an event against the machine's schema: the step applies what the schema decoded. */
const validateEvent = (kind: string, schema: Schema.Decoder<unknown>, value: unknown) =>
  Effect.flatMap(validate(kind, schema, value), (event) =>
    isActorEvent(event)
      ? Effect.succeed(event)
      : Effect.fail(new InvalidMessage({ kind, message: "an event has a type" }))
  )

const describe = (cause: Cause.Cause<unknown>) => Cause.pretty(cause).split("\n")[0] ?? "step failed"

const statusOf = (status: string): Repo.SnapshotRow["status"] =>
  status === "active" ? "active" : status === "done" ? "done" : "error"

/** Typed access to the actors of one kind, from its definition (`ActorHost.ref`). */
export interface ActorRef<D extends Binding> {
  /** Starts an actor; joins the caller's transaction when there is one. */
  readonly create: (
    actorId: string,
    input: InputOf<D>
  ) => Effect.Effect<{ readonly state: string }, ActorExists | InvalidMessage | Veto>
  /** Steps the actor with the event and answers the outcome, with the row handlers' replies. */
  readonly send: (
    actorId: string,
    event: EventOf<D>
  ) => Effect.Effect<StepOutcome<RepliesOf<D>>, ActorNotFound | ActorQuarantined | InvalidMessage>
  /**
   * Tells the actor the event as a durable message, joining the caller's transaction when there
   * is one (delivered after commit, at least once, applied at most once).
   */
  readonly tell: (actorId: string, event: EventOf<D>) => Effect.Effect<void, InvalidMessage>
}

export class ActorHost extends Context.Service<
  ActorHost,
  {
    /** The typed ref of a registered kind (a definition the runtime does not hold is a defect). */
    readonly ref: <D extends Binding>(definition: D) => ActorRef<D>
    /** Other actors as a command's own transaction (no actor's step) may start or tell them. */
    readonly transactional: TransactionalActors["Service"]
    /** Starts an actor of a kind named at run time (operators' tools, tests); callers use `ref`. */
    readonly create: (
      kind: string,
      actorId: string,
      input: unknown
    ) => Effect.Effect<{ readonly state: string }, ActorExists | UnknownKind | InvalidMessage | Veto>
    /** Sends to an actor of a kind named at run time (operators' tools, tests); callers use `ref`. */
    readonly send: (
      kind: string,
      actorId: string,
      event: ActorEvent
    ) => Effect.Effect<StepOutcome, ActorNotFound | ActorQuarantined | UnknownKind | InvalidMessage>
    /** Delivers a timer, a job's report or a told message (the runners call this). */
    readonly deliver: (delivery: Delivery, event: unknown) => Effect.Effect<DeliveryResult>
    /** Steps the actor on this node, which holds it (the cluster's entities call this). */
    readonly sendHere: (
      kind: string,
      actorId: string,
      event: unknown
    ) => Effect.Effect<StepOutcome, ActorNotFound | ActorQuarantined | UnknownKind | InvalidMessage>
    /** Delivers on this node, which holds the delivery's actor (the cluster's entities call this). */
    readonly deliverHere: (delivery: Delivery, event: unknown) => Effect.Effect<DeliveryResult>
    readonly binding: (kind: string) => Effect.Effect<Binding, UnknownKind>
    /** Drops the actor from memory and lifts its quarantine: it restarts from its last snapshot. */
    readonly restartActor: (kind: string, actorId: string) => Effect.Effect<boolean>
    /** Drops every live actor of the kind from memory and resets its supervisor's counters. */
    readonly restartKind: (kind: string) => Effect.Effect<void, UnknownKind>
    readonly liveCount: (kind: string) => Effect.Effect<number>
  }
>()("@troupe/actors/ActorHost") {
  static readonly layer = (options: HostOptions = defaultHostOptions) =>
    Layer.effect(
      ActorHost,
      Effect.gen(function* () {
        const sql = yield* SqlClient
        const bus = yield* EventBus
        const bindings = yield* Bindings
        const supervision = yield* Supervision
        const signals = yield* RunnerSignals
        const placement = yield* Placement
        const live = new Map<string, Live>()
        /** Steps between the start and the end of their commit (the notice rule in `writeEffects`). */
        let committing = 0
        /** The queued notices' sender, where the bus is PostgreSQL's (a step's statement NOTIFYs). */
        const queuedNotices = bus.notifiesInTransaction ? yield* noticeSender(sql) : undefined
        const grouped = options.groupCommit ? yield* makeGroupCommit(sql, options.groupCommit) : undefined
        /** Commits a step's writes: in a transaction of their own when `transactional`, else as they are. */
        const commitStep = grouped
          ? grouped.commit
          : <A, E, R>(writes: Effect.Effect<A, E, R>, transactional: boolean) =>
              transactional ? sql.withTransaction(writes) : writes
        /** Writes a step's statement (grouped with others waiting, under `groupCommit`). */
        const writeStatement = grouped ? grouped.writeStep : Steps.writeStep
        /** One mailbox (a one-permit semaphore) per actor with a step running or waiting. */
        const mailboxes = new Map<string, { readonly lock: Semaphore.Semaphore; users: number }>()
        const inMailbox = <A, E, R>(key: string, body: Effect.Effect<A, E, R>) =>
          Effect.acquireUseRelease(
            Effect.sync(() => {
              const mailbox = mailboxes.get(key) ?? { lock: Semaphore.makeUnsafe(1), users: 0 }
              mailboxes.set(key, mailbox)
              mailbox.users++
              return mailbox
            }),
            (mailbox) => Semaphore.withPermit(mailbox.lock, body),
            (mailbox) =>
              Effect.sync(() => {
                if (--mailbox.users === 0) mailboxes.delete(key)
              })
          )
        const keyOf = (kind: string, actorId: string) => `${kind}/${actorId}`
        const now = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis))

        const bindingOf = (kind: string) => {
          const binding = bindings.get(kind)
          return binding ? Effect.succeed(binding) : Effect.fail(new UnknownKind({ kind }))
        }

        const load = Effect.fnUntraced(function* (kind: string, actorId: string) {
          const cached = live.get(keyOf(kind, actorId))
          if (cached) {
            cached.lastUsed = Date.now()
            return cached
          }
          const found = yield* Repo.findSnapshotWithParts(kind, actorId)
          if (!found) return undefined
          const { parts, ...row } = found
          const entry: Live = { row, resolved: undefined, parts, lastUsed: Date.now() }
          live.set(keyOf(kind, actorId), entry)
          return entry
        })

        /** A snapshot this server cannot restore (newer, unmigrated, unreadable) fails the step. */
        const resolve = (binding: Binding, row: Repo.SnapshotRow) => Effect.orDie(restore(binding, row))

        /**
         * The writes every step shares: its row handlers, then ONE statement (ActorSteps.ts) with the
         * snapshot behind its seq fence (`fence`; absent at creation), its parts' changed rows, timers,
         * jobs, outbox items, the journal and the bus notices. Fails with SeqConflict, having written
         * nothing, on another seq.
         */
        const writeEffects = (
          binding: Binding,
          actorId: string,
          plan: StepPlan,
          seq: bigint,
          at: Date,
          final: boolean,
          fence: Steps.StepWrite["snapshot"],
          parts: Steps.StepWrite["parts"],
          journal: Steps.StepWrite["journal"],
          sender: StepInfo["sender"] = undefined
        ) =>
          Effect.gen(function* () {
            const replies: Record<string, unknown> = {}
            // What the row handlers publish on commit goes with the step's notices (StepMessages).
            const published: StepMessages["Service"] = { messages: [], open: true }
            if (plan.rows.length > 0) {
              const step: StepInfo = { kind: binding.kind, actorId, seq, now: at, sender }
              const actors = transactionalActors({ kind: binding.kind, actorId, seq })
              for (const row of plan.rows) {
                const handler = binding.rows[row.name]
                if (!handler) return yield* Effect.die(new UnboundAction(`${binding.kind}: no row handler ${row.name}`))
                const reply = yield* handler(row.params, step).pipe(
                  Effect.provideService(TransactionalActors, actors),
                  Effect.provideService(StepMessages, published),
                  Effect.catch((error) => (error instanceof Veto ? Effect.fail(error) : Effect.die(error)))
                )
                if (reply !== undefined) replies[row.name] = reply
              }
            }
            published.open = false
            const timers = netTimers(plan.timers)
            const notice: StepNotice = { kind: binding.kind, actorId, seq: String(seq), state: journal.toState }
            const notices: Array<BusMessage> = [
              ...published.messages,
              { channel: stepChannel, payload: JSON.stringify(notice) }
            ]
            // Alone, a step NOTIFYs; beside other committing steps it queues its notices (Notices.ts),
            // unless its row handlers published messages: those it NOTIFYs in any case, and its own with them.
            const queued = queuedNotices !== undefined && committing > 1 && published.messages.length === 0
            const written = yield* writeStatement({
              kind: binding.kind,
              actorId,
              seq,
              snapshot: fence,
              at,
              parts,
              setTimers: timers.set.map((timer) => ({
                timerId: timer.timerId,
                event: timer.event,
                dueAt: new Date(at.getTime() + timer.delayMillis)
              })),
              cancelTimers: timers.cancel,
              clearTimers: final,
              jobs: plan.jobs,
              outbox: {
                stream: binding.stream(actorId),
                resourceType: binding.resourceType,
                items: plan.emits.map((item) => ({ publicId: newPublicId(), type: item.type, payload: item.payload }))
              },
              journal,
              notify: queuedNotices !== undefined && !queued ? notices : [],
              queue: queued ? notices : []
            })
            if (!written) return yield* new SeqConflict()
            if (queuedNotices === undefined) yield* bus.publishOnCommit(notices)
            else if (queued) yield* sql.afterCommit(Queue.offer(queuedNotices, undefined))
            return replies
          })

        /** After commit: remember the new snapshot and wake the runners it gave work (`at`: the step's instant). */
        const afterCommit = (
          binding: Binding,
          actorId: string,
          row: Repo.SnapshotRow,
          resolved: AnyMachineSnapshot,
          parts: Repo.Parts,
          plan: StepPlan,
          at: Date
        ) =>
          Effect.gen(function* () {
            live.set(keyOf(binding.kind, actorId), { row, resolved, parts, lastUsed: Date.now() })
            const delays = plan.timers.flatMap((timer) => (timer.op === "set" ? [timer.delayMillis] : []))
            if (delays.length > 0) {
              const soonest = Math.min(...delays)
              yield* signals.timerSet(at.getTime() + soonest, soonest <= 0)
            }
            if (plan.jobs.length > 0) yield* Queue.offer(signals.jobs, undefined)
          })

        /** Writes a message row in the current transaction; the runner is woken after commit. */
        const tell = (kind: string, actorId: string, told: unknown, from: Sender | undefined) =>
          Effect.gen(function* () {
            const binding = yield* bindingOf(kind)
            const event = yield* validateEvent(kind, binding.entry.events, told)
            yield* Messages.insertMessage({
              from,
              toKind: kind,
              toActorId: actorId,
              event,
              now: yield* now,
              traceparent: yield* currentTraceparent
            }).pipe(Effect.orDie)
            yield* sql.afterCommit(Queue.offer(signals.messages, undefined))
          })

        /** What a step's row handlers (or a command's transaction) may do to other actors. */
        const transactionalActors = (from: Sender | undefined) =>
          TransactionalActors.of({
            create: (definition, actorId, input) =>
              Effect.orDie(
                Effect.asVoid(Effect.provideService(create(registered(definition), actorId, input), SqlClient, sql))
              ),
            tell: (definition, actorId, event) =>
              Effect.orDie(Effect.provideService(tell(registered(definition), actorId, event, from), SqlClient, sql)),
            reply: (to, event) =>
              Effect.orDie(Effect.provideService(tell(to.kind, to.actorId, event, from), SqlClient, sql))
          })

        /** The kind of a definition this runtime holds; any other is a defect of the composition. */
        const registered = (definition: Binding) => {
          if (bindings.get(definition.kind) !== definition) {
            throw new Error(`the runtime holds no definition ${definition.kind} (or holds another one)`)
          }
          return definition.kind
        }

        const ref = <D extends Binding>(definition: D): ActorRef<D> => {
          const kind = registered(definition)
          const withSql = <A, E>(effect: Effect.Effect<A, E | UnknownKind, SqlClient>) =>
            effect.pipe(
              Effect.catchTag("UnknownKind", (error) => Effect.die(error)),
              Effect.provideService(SqlClient, sql)
            )
          return {
            create: (actorId, input) => withSql(create(kind, actorId, input)),
            // The replies were answered by this definition's own row handlers, by their names.
            send: (actorId, event) =>
              withSql(send(kind, actorId, event)).pipe(Effect.map((outcome) => outcome as StepOutcome<RepliesOf<D>>)),
            tell: (actorId, event) => withSql(tell(kind, actorId, event, undefined))
          }
        }

        const create = (
          kind: string,
          actorId: string,
          given: unknown
        ): Effect.Effect<{ readonly state: string }, ActorExists | UnknownKind | InvalidMessage | Veto, SqlClient> =>
          Effect.gen(function* () {
            const binding = yield* bindingOf(kind)
            const input = yield* validate(kind, binding.entry.input, given)
            const [snapshot, actions] = initialTransitionOf(binding.entry.machine, input)
            const plan = planActions(binding, actions, 1n)
            const at = yield* now
            const state = stateText(snapshot.value)
            const persisted = persistedOf(snapshot)
            // Creation writes every element of its parts.
            const split = splitParts(binding, persisted, {})
            const row: Repo.SnapshotRow = {
              kind,
              actor_id: actorId,
              machine: binding.entry.machine.id,
              version: binding.entry.version,
              seq: 1n,
              status: statusOf(snapshot.status),
              state_value: state,
              snapshot: persisted,
              quarantined_at: null,
              created_at: at,
              updated_at: at
            }
            yield* Effect.gen(function* () {
              const inserted = yield* Repo.insertSnapshot({
                kind,
                actorId,
                machine: row.machine,
                version: row.version,
                status: row.status,
                stateValue: state,
                snapshot: split.stored,
                now: at
              })
              if (!inserted) return yield* new ActorExists({ kind, actorId })
              if ((yield* Messages.retryActorMessagesNow(kind, actorId, at)) > 0) {
                yield* sql.afterCommit(Queue.offer(signals.messages, undefined))
              }
              yield* writeEffects(
                binding,
                actorId,
                plan,
                1n,
                at,
                snapshot.status !== "active",
                undefined,
                split.writes,
                { event: { type: "xstate.init", input }, fromState: null, toState: state, actions: plan.actionTypes }
              )
              yield* sql.afterCommit(afterCommit(binding, actorId, row, snapshot, split.parts, plan, at))
            }).pipe(
              sql.withTransaction,
              // Creation writes behind no fence (its own insert above is the guard).
              Effect.catchTags({ SqlError: Effect.die, SeqConflict: Effect.die })
            )
            return { state }
          }).pipe(traceCreate(kind, actorId))

        /** One attempt at a step from the last committed snapshot. */
        const attempt = (binding: Binding, actorId: string, event: ActorEvent, delivery: Delivery | undefined) =>
          Effect.gen(function* () {
            const entry = yield* load(binding.kind, actorId)
            if (!entry) return yield* new ActorNotFound({ kind: binding.kind, actorId })
            const row = entry.row
            if (row.quarantined_at) return yield* new ActorQuarantined({ kind: binding.kind, actorId })
            const state = entry.resolved ?? (yield* resolve(binding, row))
            entry.resolved = state
            const at = yield* now
            const stamped = binding.stamp === undefined ? event : binding.stamp(event, at)
            const [next, actions] = transitionOf(binding.entry.machine, state, stamped)
            if (next === state && actions.length === 0) {
              // A rejection judged on a cached snapshot is only final if no other node moved it.
              const current = yield* Repo.findSnapshot(binding.kind, actorId)
              if (current && current.seq !== row.seq) return yield* new SeqConflict()
              if (delivery) {
                const reason = `${event.type} is not accepted in state ${row.state_value}`
                yield* settleDelivery(delivery, at, { _tag: "Rejected", reason }).pipe(sql.withTransaction)
              }
              return { _tag: "Rejected", state: row.state_value, accepts: acceptedEvents(state) } as StepOutcome
            }
            const seq = row.seq + 1n
            const plan = planActions(binding, actions, seq)
            const persisted = persistedOf(next)
            const split = splitParts(binding, persisted, entry.parts)
            const nextRow: Repo.SnapshotRow = {
              ...row,
              version: binding.entry.version,
              seq,
              status: statusOf(next.status),
              state_value: stateText(next.value),
              snapshot: persisted,
              updated_at: at
            }
            const writes = Effect.gen(function* () {
              if (delivery) yield* settleDelivery(delivery, at, { _tag: "Delivered", seq })
              const replies = yield* writeEffects(
                binding,
                actorId,
                plan,
                seq,
                at,
                next.status !== "active",
                {
                  expectedSeq: row.seq,
                  version: nextRow.version,
                  status: nextRow.status,
                  stateValue: nextRow.state_value,
                  snapshot: split.stored
                },
                split.writes,
                { event: stamped, fromState: row.state_value, toState: nextRow.state_value, actions: plan.actionTypes },
                senderOf(delivery)
              )
              yield* sql.afterCommit(afterCommit(binding, actorId, nextRow, next, split.parts, plan, at))
              return replies
            })
            // A step with no row handler and no delivery to settle is one statement, atomic alone.
            const replies = yield* Effect.suspend(() => {
              committing++
              return commitStep(writes, delivery !== undefined || plan.rows.length > 0)
            }).pipe(Effect.ensuring(Effect.sync(() => committing--)))
            return { _tag: "Accepted", state: nextRow.state_value, status: nextRow.status, seq, replies } as StepOutcome
          })

        /**
         * Consumes the delivered timer row, finishes the reported job or settles the told message,
         * or fails if an earlier delivery already did (the message's id is its dedupe key).
         */
        const settleDelivery = (delivery: Delivery, at: Date, verdict: Verdict) =>
          Effect.gen(function* () {
            const fresh =
              delivery._tag === "Timer"
                ? yield* Repo.consumeTimer(delivery.timer.id, delivery.timer.set_at_seq)
                : delivery._tag === "Job"
                  ? yield* Repo.finishJob(delivery.job.id, at)
                  : yield* Messages.settleMessage(delivery.message.id, verdict, at)
            if (!fresh) return yield* new StaleDelivery()
          })

        const senderOf = (delivery: Delivery | undefined): StepInfo["sender"] =>
          delivery?._tag === "Message" && delivery.message.from_kind !== null && delivery.message.from_actor_id !== null
            ? { kind: delivery.message.from_kind, actorId: delivery.message.from_actor_id }
            : undefined

        const quarantine = (binding: Binding, actorId: string, event: ActorEvent, error: string, attempts: number) =>
          Effect.gen(function* () {
            const at = yield* now
            yield* Effect.gen(function* () {
              yield* Repo.insertDeadLetter({ kind: binding.kind, actorId, event, error, attempts, at })
              yield* Repo.setQuarantined(binding.kind, actorId, at)
            }).pipe(sql.withTransaction, Effect.orDie)
            live.delete(keyOf(binding.kind, actorId))
            yield* supervision.recordQuarantine(binding.kind)
            yield* Effect.logWarning(`${binding.kind} ${actorId} quarantined after ${attempts} failed attempts`)
          })

        /** The step with its supervision: conflicts reload, failures retry with backoff, then quarantine. */
        const step = (binding: Binding, actorId: string, event: ActorEvent, delivery: Delivery | undefined) =>
          inMailbox(
            keyOf(binding.kind, actorId),
            Effect.gen(function* () {
              let failures = 0
              let conflicts = 0
              for (;;) {
                const exit = yield* Effect.exit(attempt(binding, actorId, event, delivery))
                if (exit._tag === "Success") return exit.value
                live.delete(keyOf(binding.kind, actorId))
                const failure = Cause.findErrorOption(exit.cause)
                if (failure._tag === "Some") {
                  const error = failure.value
                  if (error._tag === "SeqConflict" && ++conflicts < 20) continue
                  if (error._tag === "StaleDelivery") return undefined
                  if (error._tag === "Veto") {
                    const current = yield* Effect.orDie(load(binding.kind, actorId))
                    return {
                      _tag: "Vetoed",
                      state: current?.row.state_value ?? "",
                      reason: error.reason
                    } as StepOutcome
                  }
                  if (error._tag === "ActorNotFound") return yield* Effect.fail(error)
                  if (error._tag === "ActorQuarantined") return yield* Effect.fail(error)
                }
                if (Cause.hasInterruptsOnly(exit.cause)) return yield* Effect.interrupt
                failures++
                const message = describe(exit.cause)
                yield* supervision.recordFailure(binding.kind, actorId, message, yield* now)
                yield* Effect.logError(`${binding.kind} ${actorId} step failed (attempt ${failures})`, exit.cause)
                if (failures >= options.maxAttempts) {
                  yield* quarantine(binding, actorId, event, message, failures)
                  return yield* new ActorQuarantined({ kind: binding.kind, actorId })
                }
                yield* Effect.sleep(Duration.times(Duration.fromInputUnsafe(options.retryBackoff), 2 ** (failures - 1)))
              }
            })
          ).pipe(
            traceStep(
              binding.kind,
              actorId,
              event.type,
              delivery?._tag.toLowerCase() ?? "send",
              delivery?._tag === "Message" ? delivery.message.traceparent : undefined
            )
          )

        /** Steps the actor here; `placed` hands the step to the node holding it when that is not this one. */
        const send = (kind: string, actorId: string, sent: unknown, placed = true) =>
          Effect.gen(function* () {
            const binding = yield* bindingOf(kind)
            const event = yield* validateEvent(kind, binding.entry.events, sent)
            if (placed && !placement.here(kind, actorId)) {
              return (yield* placement.send(kind, actorId, event)) as StepOutcome
            }
            return (yield* step(binding, actorId, event, undefined))!
          })

        /** Settles a delivery no step will apply; answers whether it was still unsettled. */
        const refuseDelivery = (delivery: Delivery, reason: string) =>
          Effect.gen(function* () {
            return yield* settleDelivery(delivery, yield* now, { _tag: "Rejected", reason }).pipe(
              sql.withTransaction,
              Effect.as<DeliveryResult>("rejected"),
              Effect.catchTag("StaleDelivery", () => Effect.succeed<DeliveryResult>("stale")),
              Effect.orDie
            )
          })

        const deliver = (delivery: Delivery, delivered: unknown, placed = true) =>
          Effect.gen(function* () {
            const [kind, actorId] = deliveryTarget(delivery)
            if (placed && !placement.here(kind, actorId)) return yield* placement.deliver(delivery, delivered)
            const binding = bindings.get(kind)
            const event =
              binding === undefined || delivered === undefined
                ? undefined
                : yield* Effect.option(validateEvent(kind, binding.entry.events, delivered)).pipe(
                    Effect.map((decoded) => (decoded._tag === "Some" ? decoded.value : undefined))
                  )
            if (!binding || event === undefined) {
              if (binding && delivered !== undefined) {
                yield* Effect.logError(
                  `${kind} ${actorId}: dropped a ${delivery._tag.toLowerCase()} event of the wrong shape`
                )
              }
              return yield* refuseDelivery(delivery, binding ? "an event of the wrong shape" : `no kind ${kind}`)
            }
            const outcome = yield* step(binding, actorId, event, delivery).pipe(
              Effect.catchTags({
                ActorNotFound: () => Effect.succeed("absent" as const),
                ActorQuarantined: () => Effect.succeed("quarantined" as const)
              })
            )
            if (outcome === undefined) return "stale"
            if (typeof outcome === "string") return outcome
            if (outcome._tag === "Accepted") return "applied"
            // A vetoed step wrote nothing: a message it refused is settled as rejected.
            if (outcome._tag === "Vetoed") return yield* refuseDelivery(delivery, `vetoed: ${outcome.reason}`)
            return "rejected"
          })

        const restartActor = (kind: string, actorId: string) =>
          Effect.gen(function* () {
            live.delete(keyOf(kind, actorId))
            const row = yield* Repo.findSnapshot(kind, actorId).pipe(Effect.orDie)
            if (!row) return false
            if (row.quarantined_at) yield* Repo.setQuarantined(kind, actorId, null).pipe(Effect.orDie)
            yield* Messages.retryActorMessagesNow(kind, actorId, yield* now).pipe(Effect.orDie)
            yield* supervision.recordRestart(kind, yield* now)
            yield* Queue.offer(signals.timers, undefined)
            yield* Queue.offer(signals.jobs, undefined)
            yield* Queue.offer(signals.messages, undefined)
            return true
          })

        const restartKind = (kind: string) =>
          Effect.gen(function* () {
            yield* bindingOf(kind)
            for (const key of [...live.keys()]) if (key.startsWith(`${kind}/`)) live.delete(key)
            yield* supervision.recordRestart(kind, yield* now)
            yield* Queue.offer(signals.timers, undefined)
            yield* Queue.offer(signals.jobs, undefined)
            yield* Queue.offer(signals.messages, undefined)
          })

        const liveCount = (kind: string) =>
          Effect.sync(() => [...live.keys()].filter((key) => key.startsWith(`${kind}/`)).length)

        const idleMillis = Duration.toMillis(Duration.fromInputUnsafe(options.idleTimeToLive))
        yield* Effect.forkScoped(
          Effect.forever(
            Effect.sleep(Duration.min(Duration.fromInputUnsafe(options.idleTimeToLive), Duration.minutes(1))).pipe(
              Effect.andThen(
                Effect.sync(() => {
                  const cutoff = Date.now() - idleMillis
                  for (const [key, entry] of live) if (entry.lastUsed < cutoff) live.delete(key)
                })
              )
            )
          )
        )

        return ActorHost.of({
          ref,
          transactional: transactionalActors(undefined),
          create: (kind, actorId, input) => Effect.provideService(create(kind, actorId, input), SqlClient, sql),
          send: (kind, actorId, event) => Effect.provideService(send(kind, actorId, event), SqlClient, sql),
          deliver: (delivery, event) => Effect.provideService(deliver(delivery, event), SqlClient, sql),
          sendHere: (kind, actorId, event) => Effect.provideService(send(kind, actorId, event, false), SqlClient, sql),
          deliverHere: (delivery, event) => Effect.provideService(deliver(delivery, event, false), SqlClient, sql),
          binding: bindingOf,
          restartActor: (kind, actorId) => Effect.provideService(restartActor(kind, actorId), SqlClient, sql),
          restartKind,
          liveCount
        })
      })
    )
}
