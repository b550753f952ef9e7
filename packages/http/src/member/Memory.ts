// Handlers of memory at the profile, workspace and named-agent doors. Each door makes its Reach
// (the workspace door after judging the caller's standing: access for reads, write standing for
// writes) and hands the decoded body's members to the Memory domain service; the contract's
// schemas encode the rows it answers.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import type { Refusal } from "@troupe/domain/kernel/Refusals"
import {
  type EditMembers,
  type GrepMembers,
  Memory,
  type Reach,
  type RemoveMembers,
  type ShowMembers,
  type WriteMembers
} from "@troupe/domain/memory/Memory"
import { Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { NamedAgentNameLive } from "./NamedAgents.ts"

/** A document as show and the writes answer it: `{memory: document}`. */
const wrapped = <A>(memory: A) => ({ memory })

/** The six verbs over a door's Reach (the reach made per request, for reads or for writes). */
const verbs = <E extends Refusal>(
  memory: Memory["Service"],
  reach: (intent: "read" | "write") => Effect.Effect<Reach, E, CurrentMemberCaller>
) => {
  return {
    list: () => answerRefusals(Effect.flatMap(reach("read"), (r) => memory.list(r))),
    show: (members: ShowMembers) =>
      answerRefusals(Effect.flatMap(reach("read"), (r) => memory.show(r, members)).pipe(Effect.map(wrapped))),
    grep: (members: GrepMembers) => answerRefusals(Effect.flatMap(reach("read"), (r) => memory.grep(r, members))),
    write: (members: WriteMembers) =>
      answerRefusals(Effect.flatMap(reach("write"), (r) => memory.write(r, members)).pipe(Effect.map(wrapped))),
    edit: (members: EditMembers) =>
      answerRefusals(Effect.flatMap(reach("write"), (r) => memory.edit(r, members)).pipe(Effect.map(wrapped))),
    remove: (members: RemoveMembers) => answerRefusals(Effect.flatMap(reach("write"), (r) => memory.remove(r, members)))
  }
}

export const ProfileMemoryHandlers = HttpApiBuilder.group(
  TroupeApi,
  "profileMemory",
  Effect.fn(function* (handlers) {
    const memory = yield* Memory
    const door = verbs(memory, () => Effect.map(CurrentMemberCaller, memory.profileReach))
    return handlers
      .handle("list", () => door.list())
      .handle("show", ({ payload }) => door.show(payload))
      .handle("grep", ({ payload }) => door.grep(payload))
      .handle("write", ({ payload }) => door.write(payload))
      .handle("edit", ({ payload }) => door.edit(payload))
      .handle("remove", ({ payload }) => door.remove(payload))
  })
)

export const WorkspaceMemoryHandlers = HttpApiBuilder.group(
  TroupeApi,
  "workspaceMemory",
  Effect.fn(function* (handlers) {
    const memory = yield* Memory
    const workspaces = yield* Workspaces
    const door = (workspaceId: string) =>
      verbs(memory, (intent) =>
        Effect.gen(function* () {
          const caller = yield* CurrentMemberCaller
          const workspace =
            intent === "read"
              ? yield* workspaces.read(caller, workspaceId)
              : yield* workspaces.writable(caller, workspaceId)
          return memory.workspaceReach(caller, workspace)
        })
      )
    return handlers
      .handle("list", ({ params }) => door(params.workspace_id).list())
      .handle("show", ({ params, payload }) => door(params.workspace_id).show(payload))
      .handle("grep", ({ params, payload }) => door(params.workspace_id).grep(payload))
      .handle("write", ({ params, payload }) => door(params.workspace_id).write(payload))
      .handle("edit", ({ params, payload }) => door(params.workspace_id).edit(payload))
      .handle("remove", ({ params, payload }) => door(params.workspace_id).remove(payload))
  })
)

export const NamedAgentMemoryHandlers = HttpApiBuilder.group(
  TroupeApi,
  "namedAgentMemory",
  Effect.fn(function* (handlers) {
    const memory = yield* Memory
    const door = (name: string) =>
      verbs(memory, () => Effect.flatMap(CurrentMemberCaller, (caller) => memory.namedAgentReach(caller, name)))
    return handlers
      .handle("list", ({ params }) => door(params.name).list())
      .handle("show", ({ params, payload }) => door(params.name).show(payload))
      .handle("grep", ({ params, payload }) => door(params.name).grep(payload))
      .handle("write", ({ params, payload }) => door(params.name).write(payload))
      .handle("edit", ({ params, payload }) => door(params.name).edit(payload))
      .handle("remove", ({ params, payload }) => door(params.name).remove(payload))
  })
).pipe(Layer.provide(NamedAgentNameLive))
