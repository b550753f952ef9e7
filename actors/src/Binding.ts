// A binding ties a machine to the shell: which named effect requests are row writes in the
// step's transaction, which are after-commit jobs, and where its narrated items go.
import type { MachineEntry } from "@troupe/machines/registry"
import { Context, type Effect, Schema } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"

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
}

export interface JobInfo {
  readonly kind: string
  readonly actorId: string
  readonly seq: bigint
  readonly actionIndex: number
  readonly attempt: number
}

/**
 * A row handler's refusal: a precondition only the database can judge does not hold, so the step
 * must not happen. The step is rolled back and answered `Vetoed`; it is not a failure.
 */
export class Veto extends Schema.TaggedError<Veto>()("Veto", { reason: Schema.String }) {}

/**
 * Row writes run inside the step's transaction: a failure rolls the whole step back. What a
 * handler answers (when not undefined) is handed to the caller of `send` under the action's
 * name, never journaled: the way to show a minted secret once.
 */
export type RowHandler = (params: any, step: StepInfo) => Effect.Effect<unknown, unknown, SqlClient | ActorSpawner>

/**
 * What a row handler may do to other actors within its step: start them, joining the step's
 * transaction. (Sending to another actor from inside a step would hold a transaction while
 * waiting for that actor's mailbox; that is what jobs are for.)
 */
export class ActorSpawner extends Context.Service<
  ActorSpawner,
  { readonly create: (kind: string, actorId: string, input: unknown) => Effect.Effect<void> }
>()("@troupe/actors/ActorSpawner") {}

/** After-commit work; answers the event to report back to the actor, if any. Failures retry. */
export type JobHandler = (params: any, job: JobInfo) => Effect.Effect<ActorEvent | undefined, unknown>

export interface Binding {
  readonly kind: string
  readonly entry: MachineEntry
  /** The resource type narrated items describe, e.g. "api_session". */
  readonly resourceType: string
  /** The event stream the actor's emitted items are appended to. */
  readonly stream: (actorId: string) => string
  readonly rows: Readonly<Record<string, RowHandler>>
  readonly jobs: Readonly<Record<string, JobHandler>>
}

export class Bindings extends Context.Service<Bindings, ReadonlyMap<string, Binding>>()("@troupe/actors/Bindings") {}

export const bindingsOf = (...bindings: ReadonlyArray<Binding>): ReadonlyMap<string, Binding> =>
  new Map(bindings.map((binding) => [binding.kind, binding]))
