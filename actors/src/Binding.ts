// A binding ties a machine to the shell, one definition per kind (`defineActor`): its machine
// entry (machine, version, input and event schemas, effect names, snapshot migrations), which
// effect requests are row writes in the step's transaction and which are after-commit jobs,
// where its narrated items go, and which context members are kept as rows (its parts). Handlers'
// params are typed from the machine's effect requests and their replies reach the caller typed;
// `Binding` is the same definition with its types erased.
import type { MachineEntry } from "@troupe/machines/registry"
import { Context, type Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { SqlError } from "effect/sql/SqlError"
import type { ContextFrom, StateMachine } from "xstate"

export interface ActorEvent {
  readonly type: string
  readonly [key: string]: unknown
}

export interface StepInfo {
  readonly kind: string
  readonly actorId: string
  /** The seq this step commits. */
  readonly seq: bigint
  readonly now: Date
  /** The actor that told the message this step applies (tell it a reply), when it came from one. */
  readonly sender: { readonly kind: string; readonly actorId: string } | undefined
}

export interface JobInfo {
  readonly kind: string
  readonly actorId: string
  readonly seq: bigint
  readonly actionIndex: number
  /** 1 on the first run; more when an earlier run failed or its runner died holding the lease. */
  readonly attempt: number
  /**
   * Steps the job's own actor with a progress event while the job runs (a long job's partial
   * results): "applied" when the actor took it, "refused" when it no longer accepts it (the job
   * should stop). Not deduplicated: the machine judges a repeat by what the event carries.
   */
  readonly report: (event: ActorEvent) => Effect.Effect<"applied" | "refused">
  /** The actor's current state value as last committed (to notice a cancellation while waiting). */
  readonly actorState: Effect.Effect<string | undefined>
}

/**
 * A row handler's refusal: a precondition only the database can judge does not hold, so the step
 * must not happen. The step is rolled back and answered `Vetoed`; it is not a failure.
 */
export class Veto extends Schema.TaggedError<Veto>()("Veto", { reason: Schema.String }) {}

/** What the named action `name` of a machine is given (from its `setup({ actions })`). */
type ParamsOf<M, Name> =
  M extends StateMachine<
    infer _Context,
    infer _Event,
    infer _Children,
    infer _Actor,
    infer Action,
    infer _Guard,
    infer _Delay,
    infer _StateValue,
    infer _Tag,
    infer _Input,
    infer _Output,
    infer _Emitted,
    infer _Meta,
    infer _Schema,
    infer _TransitionMeta
  >
    ? Extract<Action, { readonly type: Name }>["params"]
    : never

type EffectName<E extends MachineEntry> = E["effects"][keyof E["effects"]]

/**
 * Row writes run inside the step's transaction: a failure rolls the whole step back (a `Veto`
 * answers `Vetoed`; anything else is a failure of the step). What a handler answers (when not
 * undefined) is handed to the caller of `send` under the action's name, never journaled: the way
 * to show a minted secret once. The host gives a handler only the step's SqlClient (and
 * TransactionalActors): it reaches a repository by the repository's `make` on that client. What
 * it publishes on commit (EventBus.publishOnCommit) goes with the step's notices, in its statement.
 */
export type RowHandler<Params, Reply> = (
  params: Params,
  step: StepInfo
) => Effect.Effect<Reply, Veto | SqlError, SqlClient | TransactionalActors>

/**
 * After-commit work; answers the event to report back to the actor, if any. Failures retry. It
 * may read rows through the runner's SqlClient (what it writes belongs to no actor's subject), and
 * tell other actors as a command does, in a transaction of its own (TransactionalActors).
 */
export type JobHandler<Params, Event> = (
  params: Params,
  job: JobInfo
) => Effect.Effect<Event | undefined, unknown, SqlClient | TransactionalActors>

type RowHandlers<E extends MachineEntry> = {
  readonly [N in EffectName<E>]?: RowHandler<ParamsOf<E["machine"], N>, unknown>
}

type JobHandlers<E extends MachineEntry> = {
  readonly [N in EffectName<E>]?: JobHandler<ParamsOf<E["machine"], N>, E["events"]["Type"]>
}

/**
 * Members of the machine's context that are arrays, each with how its elements are keyed (unique
 * within the array): kept as rows (`actor_parts`) rather than inside the snapshot.
 */
type PartKeys<E extends MachineEntry, C = ContextFrom<E["machine"]>> = {
  readonly [N in keyof C as C[N] extends ReadonlyArray<unknown> ? N : never]?: C[N] extends ReadonlyArray<infer Element>
    ? (element: Element) => string
    : never
}

/** Keys of `T` that are not in `K` may not be given. */
type Only<T, K extends PropertyKey> = { readonly [N in Exclude<keyof T, K>]: never }

/** One kind of actor: its machine entry, its handlers, and where its narrated items go. */
export interface ActorDefinition<
  Kind extends string,
  Entry extends MachineEntry,
  Rows extends RowHandlers<Entry>,
  Jobs extends JobHandlers<Entry>
> {
  readonly kind: Kind
  readonly entry: Entry
  /** The resource type narrated items describe, e.g. "api_session". */
  readonly resourceType: string
  /** The event stream the actor's emitted items are appended to. */
  readonly stream: (actorId: string) => string
  /** Effect requests carried out in the step's transaction. */
  readonly rows: Rows
  /** Effect requests carried out after commit (every effect request is one or the other). */
  readonly jobs: Jobs
  /**
   * Gives an event the step's instant before the machine sees it (and the journal records it), for
   * a machine that reads time from its events: told messages and timers carry none of their own.
   */
  readonly stamp?: (event: ActorEvent, now: Date) => ActorEvent
  /**
   * Context parts: array members of the context whose elements are kept as rows, one per element
   * by its key, so a step writes only the elements it changed (by reference, index by index)
   * rather than the whole array inside the snapshot; restoring puts them back before migrations.
   */
  readonly parts?: NoInfer<PartKeys<Entry>>
}

/**
 * Defines an actor kind. Every effect request the machine names is exactly one of a row handler
 * or a job: a missing one or an unknown row handler does not compile, an unknown or doubled job
 * throws here (at import); handlers' params are typed from the machine's actions, and job reports
 * must be events of the machine.
 */
export const defineActor = <
  const Kind extends string,
  Entry extends MachineEntry,
  Rows extends RowHandlers<Entry> & Only<Rows, EffectName<Entry>>,
  Jobs extends JobHandlers<Entry>
>(
  definition: ActorDefinition<Kind, Entry, Rows, Jobs> & {
    readonly jobs: { readonly [N in Exclude<EffectName<Entry>, keyof Rows>]: unknown }
  }
): ActorDefinition<Kind, Entry, Rows, Jobs> => {
  const effects = new Set<string>(Object.values(definition.entry.effects))
  for (const name of Object.keys(definition.jobs)) {
    if (!effects.has(name) || name in definition.rows) {
      throw new Error(`${definition.kind}: ${name} is not an effect request of its own, or is also a row handler`)
    }
  }
  return definition
}

/** The definition with its types erased, as the host holds it (methods keep params bivariant). */
export interface Binding {
  readonly kind: string
  readonly entry: MachineEntry
  readonly resourceType: string
  readonly stream: (actorId: string) => string
  readonly rows: Readonly<Record<string, ErasedRowHandler | undefined>>
  readonly jobs: Readonly<Record<string, ErasedJobHandler | undefined>>
  readonly stamp?: (event: ActorEvent, now: Date) => ActorEvent
  readonly parts?: Readonly<Record<string, ErasedPartKey | undefined>>
}

type ErasedPartKey = { key(element: unknown): string }["key"]

type ErasedRowHandler = {
  handle(params: unknown, step: StepInfo): Effect.Effect<unknown, Veto | SqlError, SqlClient | TransactionalActors>
}["handle"]

type ErasedJobHandler = {
  handle(params: unknown, job: JobInfo): Effect.Effect<ActorEvent | undefined, unknown, SqlClient | TransactionalActors>
}["handle"]

/** What `create` is given for a kind. */
export type InputOf<D extends Binding> = D["entry"]["input"]["Type"]
/** The events a kind accepts. */
export type EventOf<D extends Binding> = D["entry"]["events"]["Type"]
/** What a step's row handlers answer, by effect request name. */
export type RepliesOf<D extends Binding> = {
  readonly [N in keyof D["rows"]]?: D["rows"][N] extends (
    ...args: never
  ) => Effect.Effect<infer Reply, infer _E, infer _R>
    ? Reply
    : never
}

/**
 * Other actors as seen from inside a transaction (a step's, or a command's own): `create` starts
 * one in it; `tell` writes a durable message in it, delivered after commit, at least once, and
 * applied by the receiver at most once. A step never waits on another actor's mailbox while it
 * holds its transaction: what it tells is delivered by the message runner.
 */
export class TransactionalActors extends Context.Service<
  TransactionalActors,
  {
    readonly create: <D extends Binding>(definition: D, actorId: string, input: InputOf<D>) => Effect.Effect<void>
    readonly tell: <D extends Binding>(definition: D, actorId: string, event: EventOf<D>) => Effect.Effect<void>
    /**
     * Tells the actor at `to` (one that asked this one for work, by the address it gave) the
     * reply the asked kind defines; the receiver's own event schema judges it on delivery.
     */
    readonly reply: (to: { readonly kind: string; readonly actorId: string }, event: ActorEvent) => Effect.Effect<void>
  }
>()("@troupe/actors/TransactionalActors") {}

export class Bindings extends Context.Service<Bindings, ReadonlyMap<string, Binding>>()("@troupe/actors/Bindings") {}

export const bindingsOf = (...bindings: ReadonlyArray<Binding>): ReadonlyMap<string, Binding> =>
  new Map(bindings.map((binding) => [binding.kind, binding]))
