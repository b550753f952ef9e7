// Who may read an upload (supplement "Uploads"): its descriptor, only its creator (an executor's
// uploads have no member reader); its bytes, thumbnail and preview, the creator or whoever can
// read a row naming it. `mayReadBytes` is that one rule; a feature whose rows name uploads (in
// upload_namings, under its holder kind) extends it by providing its NamingRule in NamingRules to
// the Uploads layer where the server is composed (inference requests do).
import type { Naming, UploadRow } from "@troupe/storage/repositories/Uploads"
import { Context, Effect, Layer } from "effect"

/** A member-plane reader: the acting principal (an agent, or a human). */
export interface UploadReader {
  readonly userId: bigint
}

/** Whether `reader` may read any of the holder kind's rows `holderIds` (each names the upload). */
export type NamingRule = (reader: UploadReader, holderIds: ReadonlyArray<bigint>) => Effect.Effect<boolean>

/** The rule of each holder kind of upload_namings; a naming of a kind without a rule opens nothing. */
export const NamingRules = Context.Reference<Readonly<Record<string, NamingRule>>>(
  "@troupe/domain/uploads/NamingRules",
  { defaultValue: () => ({}) }
)

/** One NamingRules of the naming features' rules, each an effect answering its holder kinds' rules. */
export const namingRulesOf = <
  const Features extends ReadonlyArray<Effect.Effect<Readonly<Record<string, NamingRule>>, never, any>>
>(
  ...features: Features
) =>
  Layer.effect(
    NamingRules,
    Effect.map(
      // Each feature's requirements, together (Effect.all over a generic tuple would lose them).
      Effect.all(
        features as ReadonlyArray<
          Effect.Effect<Readonly<Record<string, NamingRule>>, never, Effect.Services<Features[number]>>
        >
      ),
      (rules) => Object.assign({}, ...rules)
    )
  )

export const isCreator = (reader: UploadReader, upload: UploadRow) => upload.creator_user_id === reader.userId

/** The creator, or a reader of a row naming the upload (`namings` are read only when needed). */
export const mayReadBytes = (
  rules: Readonly<Record<string, NamingRule>>,
  reader: UploadReader,
  upload: UploadRow,
  namings: Effect.Effect<ReadonlyArray<Naming>>
): Effect.Effect<boolean> =>
  isCreator(reader, upload)
    ? Effect.succeed(true)
    : Effect.gen(function* () {
        const byKind = new Map<string, Array<bigint>>()
        for (const naming of yield* namings) {
          byKind.set(naming.holder_kind, [...(byKind.get(naming.holder_kind) ?? []), naming.holder_id])
        }
        for (const [kind, holderIds] of byKind) {
          const rule = rules[kind]
          if (rule !== undefined && (yield* rule(reader, holderIds))) return true
        }
        return false
      })
