// A hosted run's memory calls (runs supplement "Tool catalog": memory_read, _write, _edit, _ls,
// _grep, _delete) through its conversation's memory door (conversations/ConversationMemory.ts),
// for the run's creator as that door's caller: the conversation's bindings (memory_context; null
// the default roots, {bindings: []} none) decide what a path reaches and whether it is writable,
// and a write tells the conversation (context_revision +1). Installed in ConversationMemorySlot.
import { Effect, Layer } from "effect"
import type { Caller } from "../accounts/Caller.ts"
import { ConversationMemory } from "../conversations/ConversationMemory.ts"
import { ConversationMemorySlot } from "./ConversationMemorySlot.ts"
import { makeRunCaller } from "./RunCaller.ts"
import type { Refusal } from "./ToolArguments.ts"

export const ConversationMemoryTools = {
  /** Installs the conversation memory door in the run actor's slot. */
  layer: Layer.effectDiscard(
    Effect.gen(function* () {
      const slot = yield* ConversationMemorySlot
      const door = yield* ConversationMemory
      const callerOf = yield* makeRunCaller
      yield* slot.install((run) => {
        const at = { workspaceId: run.workspace_public_id, conversationId: run.conversation_public_id }
        /** A verb of the door as the run's creator. */
        const as = <A>(verb: (caller: Caller) => Effect.Effect<A, Refusal>) =>
          Effect.flatMap(callerOf(run), ({ caller }) => verb(caller))
        return {
          list: () => as((caller) => door.list(caller, at, {})),
          show: (members) => as((caller) => door.show(caller, at, members)),
          grep: (members) => as((caller) => door.grep(caller, at, members)),
          write: (members) => as((caller) => door.write(caller, at, members)),
          edit: (members) => as((caller) => door.edit(caller, at, members)),
          remove: (members) => as((caller) => door.remove(caller, at, members))
        }
      })
    })
  )
}
