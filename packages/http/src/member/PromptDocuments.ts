// Handlers of Member: prompt documents, at the profile door and the workspace door. The domain
// judges slots, standing and documents; its refusals are answered by `answerRefusals`, and the
// contract's schemas encode the rows it answers.
import { TroupeApi } from "@troupe/contracts/Api"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { type Door, PromptDocuments, type WriteInput } from "@troupe/domain/memory/PromptDocuments"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"

const profile: Door = { _tag: "Profile" }
const workspace = (params: { readonly workspace_id: string }): Door => ({
  _tag: "Workspace",
  workspaceId: params.workspace_id
})

export const PromptDocumentsHandlers = HttpApiBuilder.group(
  TroupeApi,
  "promptDocuments",
  Effect.fn(function* (handlers) {
    const documents = yield* PromptDocuments

    const list = (door: Door) =>
      Effect.flatMap(CurrentMemberCaller, (who) => documents.list(who, door)).pipe(
        Effect.map((rows) => ({ prompt_documents: rows })),
        answerRefusals
      )
    const read = (door: Door, slot: string) =>
      Effect.flatMap(CurrentMemberCaller, (who) => documents.read(who, door, slot)).pipe(
        Effect.map((row) => ({ prompt_document: row })),
        answerRefusals
      )
    const write = (door: Door, slot: string, members: WriteInput) =>
      Effect.flatMap(CurrentMemberCaller, (who) => documents.write(who, door, slot, members)).pipe(
        Effect.map((row) => ({ prompt_document: row })),
        answerRefusals
      )
    const remove = (door: Door, slot: string) =>
      Effect.flatMap(CurrentMemberCaller, (who) => documents.remove(who, door, slot)).pipe(answerRefusals)

    return handlers
      .handle("profileList", () => list(profile))
      .handle("profileRead", ({ params }) => read(profile, params.slot))
      .handle("profileWrite", ({ params, payload }) => write(profile, params.slot, payload))
      .handle("profileDelete", ({ params }) => remove(profile, params.slot))
      .handle("workspaceList", ({ params }) => list(workspace(params)))
      .handle("workspaceRead", ({ params }) => read(workspace(params), params.slot))
      .handle("workspaceWrite", ({ params, payload }) => write(workspace(params), params.slot, payload))
      .handle("workspaceDelete", ({ params }) => remove(workspace(params), params.slot))
  })
)
