// Where a hosted run's memory calls find its conversation's memory door (ConversationMemoryTools.ts):
// the memory verbs over the conversation's bindings, for the run's creator. The run's actor is
// defined before the conversation doors exist (they host runs, a cycle of layers), so the door is
// installed here once the domain is built: a write-once cell (a Deferred) of this layer, not a
// global. A call that comes before that (a job recovered at boot) waits for it.
import type { MemoryDocumentRow, MemorySummaryRow } from "@troupe/storage/repositories/Memory"
import type { RunRow } from "@troupe/storage/repositories/Runs"
import { Context, Deferred, Effect, Layer } from "effect"
import type {
  EditMembers,
  GrepMembers,
  GrepResult,
  RemoveMembers,
  ShowMembers,
  WriteMembers
} from "../memory/Memory.ts"
import type { Refusal } from "./ToolArguments.ts"

/** The memory verbs one run's calls reach, each failing with the refusal the model reads. */
export interface MemoryVerbs {
  readonly list: () => Effect.Effect<ReadonlyArray<MemorySummaryRow>, Refusal>
  readonly show: (members: ShowMembers) => Effect.Effect<MemoryDocumentRow, Refusal>
  readonly grep: (members: GrepMembers) => Effect.Effect<GrepResult, Refusal>
  readonly write: (members: WriteMembers) => Effect.Effect<MemoryDocumentRow, Refusal>
  readonly edit: (members: EditMembers) => Effect.Effect<MemoryDocumentRow, Refusal>
  readonly remove: (members: RemoveMembers) => Effect.Effect<void, Refusal>
}

/** A run its conversation hosts. */
export type HostedRun = RunRow & { readonly conversation_public_id: string }

/** The verbs of a hosted run's conversation memory door, for the run's creator. */
export type HostedMemory = (run: HostedRun) => MemoryVerbs

export class ConversationMemorySlot extends Context.Service<
  ConversationMemorySlot,
  {
    /** Installs the door (once: a second install changes nothing). */
    readonly install: (work: HostedMemory) => Effect.Effect<void>
    /** The verbs of a hosted run (its conversation's door). */
    readonly bind: (run: HostedRun) => MemoryVerbs
  }
>()("@troupe/domain/runs/ConversationMemorySlot") {
  static readonly layer = Layer.effect(
    ConversationMemorySlot,
    Effect.gen(function* () {
      const installed = yield* Deferred.make<HostedMemory>()
      /** One verb of the installed door, once it is installed. */
      const use =
        <A, M extends ReadonlyArray<unknown>>(
          run: HostedRun,
          verb: (verbs: MemoryVerbs) => (...members: M) => Effect.Effect<A, Refusal>
        ) =>
        (...members: M) =>
          Effect.flatMap(Deferred.await(installed), (work) => verb(work(run))(...members))
      return {
        install: (work) => Effect.asVoid(Deferred.succeed(installed, work)),
        bind: (run) => ({
          list: use(run, (verbs) => verbs.list),
          show: use(run, (verbs) => verbs.show),
          grep: use(run, (verbs) => verbs.grep),
          write: use(run, (verbs) => verbs.write),
          edit: use(run, (verbs) => verbs.edit),
          remove: use(run, (verbs) => verbs.remove)
        })
      }
    })
  )
}
