// The naming rule of conversation inputs (supplement "Uploads"): whoever can read the
// conversation of an input binding an upload as an attachment may read the upload's bytes,
// thumbnail and preview. The namings themselves are written with the input rows
// (storage InputAttachmentNamings); this answers the Uploads layer's NamingRules.
import { withDatabase } from "@troupe/storage/Defects"
import { inputNamingKind, inputsReadableBy } from "@troupe/storage/repositories/InputAttachmentNamings"
import { Effect } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { NamingRule } from "../uploads/UploadAccess.ts"

export const inputNamingRules = Effect.gen(function* () {
  const db = withDatabase(yield* SqlClient)
  const rule: NamingRule = (reader, holderIds) => db(inputsReadableBy(reader.userId, holderIds))
  return { [inputNamingKind]: rule }
})
