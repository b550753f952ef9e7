// Member: conversation store entries (spec "Member: store entries"): the conversation host, with
// the workspace host's shape and rules (creates replay within 24 hours, Idempotency-Replayed).
import { Schema } from "effect"
import { HttpApiGroup, OpenApi } from "effect/http-api"
import { Idempotent } from "../Idempotency.ts"
import { MemberAuthentication } from "./Caller.ts"
import { StoreEntryBudget, storeEntryEndpoints } from "./StoreEntries.ts"

const conversation = storeEntryEndpoints(
  "/agent_api/v1/workspaces/:workspace_id/conversations/:conversation_id/store_entries",
  { workspace_id: Schema.String, conversation_id: Schema.String }
)

/** Reads need read level on the conversation; writes full level, write standing, not archived. */
export class ConversationStoreEntriesGroup extends HttpApiGroup.make("conversationStoreEntries")
  .add(
    conversation.list,
    conversation.create.middleware(Idempotent),
    conversation.show,
    conversation.update,
    conversation.remove
  )
  .middleware(StoreEntryBudget)
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: conversation store entries" })) {}
