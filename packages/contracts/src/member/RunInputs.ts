// Member: the run inputs door (spec "Member: runs", runs supplement "Tool catalog, default
// runner, run inputs"): a standalone run's message queue, with the conversation door's bodies
// (members the run door does not take are refused by name, 422 validation_failed).
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { BadRequest, Conflict, ContentTooLarge, Forbidden, NotFound, Unprocessable } from "../Errors.ts"
import { IdempotencyKeyHeader, Idempotent } from "../Idempotency.ts"
import { MemberAuthentication } from "./Caller.ts"
import { CreateInputBody, ReorderInputsBody, UpdateInputBody } from "./ConversationInputs.ts"
import { InputQueue } from "./ConversationShapes.ts"

export const RunInput = Schema.Struct({
  public_id: Schema.String,
  run_public_id: Schema.String,
  kind: Schema.Literal("message"),
  text: Schema.String,
  state: Schema.Literals(["pending", "steering", "consumed"]),
  delivery_mode: Schema.Literals(["queue", "steer"]),
  queue_position: Schema.Natural,
  deliver_at: Schema.NullOr(Schema.DateFromString),
  author_public_id: Schema.String,
  task_key: Schema.NullOr(Schema.String),
  lock_version: Schema.Natural,
  created_at: Schema.DateFromString
})

export const RunInputResponse = Schema.Struct({ input: RunInput })
export const RunInputListResponse = Schema.Struct({ inputs: Schema.Array(RunInput), input_queue: InputQueue })

const collection = "/agent_api/v1/workspaces/:workspace_id/runs/:run_id/inputs"
const runParams = { workspace_id: Schema.String, run_id: Schema.String }
const params = { ...runParams, input_id: Schema.String }
const errors = [BadRequest, Forbidden, NotFound, Conflict, ContentTooLarge, Unprocessable]

export class RunInputsGroup extends HttpApiGroup.make("runInputs")
  .add(
    HttpApiEndpoint.get("list", collection, {
      params: runParams,
      success: RunInputListResponse,
      error: errors
    }).annotate(OpenApi.Description, "The standalone run's queued inputs in read order."),
    HttpApiEndpoint.post("create", collection, {
      params: runParams,
      headers: IdempotencyKeyHeader,
      payload: CreateInputBody,
      success: RunInputResponse.pipe(HttpApiSchema.status(202)),
      error: errors
    })
      .annotate(
        OpenApi.Description,
        "Header Idempotency-Key. Queues a message input for a standalone run: 202, accepted durably. Conversation-hosted runs are 409 conversation_hosted."
      )
      .middleware(Idempotent),
    HttpApiEndpoint.patch("update", `${collection}/:input_id`, {
      params,
      payload: UpdateInputBody,
      success: RunInputResponse,
      error: errors
    }).annotate(OpenApi.Description, "Edits a queued run input: 200."),
    HttpApiEndpoint.delete("remove", `${collection}/:input_id`, { params, error: errors }).annotate(
      OpenApi.Description,
      "Withdraws a queued run input: 204."
    ),
    HttpApiEndpoint.post("reorder", `${collection}/reorder`, {
      params: runParams,
      payload: ReorderInputsBody,
      success: RunInputListResponse,
      error: errors
    }).annotate(
      OpenApi.Description,
      "{inputs: [public_id, ...]} naming every one of the caller's rows exactly: the new order."
    )
  )
  .middleware(MemberAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Member: run inputs" })) {}
