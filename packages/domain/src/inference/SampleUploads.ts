// The uploads a sealed sample (a conversation's reply, a run's round) may name, and the refusals of
// them that fail that sample instead of the step that seals it (CreateRules judges them).
import { UploadsRepository } from "@troupe/storage/repositories/Uploads"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql/SqlClient"
import type { Asker } from "./CreateRules.ts"

/** The uploads a sample may name: `owner`'s own (an input's author judged them at its create). */
export const askerFor = (owner: bigint): Effect.Effect<Asker, never, SqlClient> =>
  Effect.map(UploadsRepository.make, (uploads) => ({
    userId: owner,
    find: (publicId: string) => uploads.findUpload(publicId).pipe(Effect.orDie),
    standingFallbacks: []
  }))

/** The refusals of a sample's uploads (not the owner's, not admitted, too large): the sample fails with them. */
export const mediaRefusals: ReadonlyArray<string> = [
  "unknown_input_upload",
  "unsupported_input_media",
  "input_media_too_large"
]
