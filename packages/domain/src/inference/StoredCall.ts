// What an inference request keeps of its create body on its row: the provider call every attempt
// makes (the model and attempt numbers are each attempt's own; upload parts name their blob), as a
// Schema so the row is decoded, not cast, when an attempt reads it.
import { Schema } from "effect"
import { Workload } from "../models/Provider.ts"

/** Text, or an upload by its blob (the bytes are read from the blob store when an attempt runs). */
const Part = Schema.Union([
  Schema.Struct({ type: Schema.Literal("text"), text: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("upload"),
    uploadPublicId: Schema.String,
    contentType: Schema.String,
    filename: Schema.String,
    sha256: Schema.String
  })
])
export type StoredPart = typeof Part.Type

const ToolCall = Schema.Struct({ callId: Schema.String, name: Schema.String, arguments: Schema.String })

export const StoredMessage = Schema.Struct({
  role: Schema.Literals(["system", "developer", "user", "assistant", "tool"]),
  content: Schema.Array(Part),
  toolCalls: Schema.optionalKey(Schema.Array(ToolCall)),
  toolCallId: Schema.optionalKey(Schema.String)
})
export type StoredMessage = typeof StoredMessage.Type

export const StoredCall = Schema.Struct({
  call: Schema.Struct({
    workload: Workload,
    messages: Schema.Array(StoredMessage),
    tools: Schema.Array(
      Schema.Struct({
        name: Schema.String,
        description: Schema.optionalKey(Schema.String),
        parameters: Schema.optionalKey(Schema.Unknown)
      })
    ),
    maxOutputTokens: Schema.optionalKey(Schema.Number),
    temperature: Schema.optionalKey(Schema.Number),
    topP: Schema.optionalKey(Schema.Number),
    size: Schema.optionalKey(Schema.String),
    voice: Schema.optionalKey(Schema.String),
    reasoning: Schema.Struct({ enabled: Schema.Boolean, effort: Schema.NullOr(Schema.String) })
  })
})
export type StoredCall = typeof StoredCall.Type
