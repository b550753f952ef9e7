// Prompt documents (spec "Prompt document"): a slot's text, role and version at two doors, the
// caller's profile (system_prompt and summarizer for an agent, persona for a human) and a
// workspace (its character). Owns the slot rules (which slots a door has, the role and macros a
// slot takes, the macro registry) and who may read or write a workspace's documents (seeing to
// read; write standing to write, judged by Workspaces). The shape of a document (text, not blank,
// at most 64 KiB, a known role) is the contract's. Rendering the macros is not done here: read
// answers the text unrendered.

import { withDatabase } from "@troupe/storage/Defects"
import * as Repo from "@troupe/storage/repositories/PromptDocuments"
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import type { Caller } from "../accounts/Caller.ts"
import { now } from "../kernel/Now.ts"
import { Absent, Invalid, type NotPermitted, type StateConflict } from "../kernel/Refusals.ts"
import { Workspaces } from "../workspaces/Workspaces.ts"

export type Role = Repo.Role
export type PromptDocumentRow = Repo.PromptDocumentRow
export type PromptDocumentSummaryRow = Repo.PromptDocumentSummaryRow

/** The macro registry: the names a document may use as `{{name}}`. */
export const macroNames = ["agent", "user", "workspace", "date", "conversation_kind"] as const

/** Slots of the profile door by the caller's kind, and of the workspace door. */
export const profileSlots = { agent: ["system_prompt", "summarizer"], human: ["persona"] } as const
export const workspaceSlots = ["character"] as const

/** A slot whose content is text only: no macros, role system only. */
const contentOnly = (slot: string) => slot === "summarizer"

/**
 * A macro is `{{name}}`, spaces inside the braces allowed, where name starts with a letter or `_`
 * and goes on with letters, digits, `_`, `.` or `-`. Other brace runs (`{{"a": 1}}`) are text.
 */
const macroPattern = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g

/** The macro names a text uses, each once, in order of first use. */
export const macrosIn = (content: string): ReadonlyArray<string> => [
  ...new Set(Array.from(content.matchAll(macroPattern), (match) => match[1]!))
]

/** Where the documents are: the caller's profile, or a workspace by public id. */
export type Door = { readonly _tag: "Profile" } | { readonly _tag: "Workspace"; readonly workspaceId: string }

/** A write's members as the contract decodes them: text within the bound, a known role (null: system). */
export interface WriteInput {
  readonly content: string
  readonly role?: Role | null
}

const invalid = (message: string) => Effect.fail(new Invalid({ code: "prompt_document_invalid", message }))

/** What a door refuses before its documents are touched: unseen, slot, standing. */
type DoorRefusal = Absent | Invalid | NotPermitted | StateConflict

export class PromptDocuments extends Context.Service<
  PromptDocuments,
  {
    /** The door's documents (without content), ordered by slot. */
    readonly list: (caller: Caller, door: Door) => Effect.Effect<ReadonlyArray<PromptDocumentSummaryRow>, DoorRefusal>
    readonly read: (caller: Caller, door: Door, slot: string) => Effect.Effect<PromptDocumentRow, DoorRefusal>
    /** Whole replacement; an omitted role resets to system. Counts one more write on the version. */
    readonly write: (
      caller: Caller,
      door: Door,
      slot: string,
      input: WriteInput
    ) => Effect.Effect<PromptDocumentRow, DoorRefusal>
    readonly remove: (caller: Caller, door: Door, slot: string) => Effect.Effect<void, DoorRefusal>
  }
>()("@troupe/domain/memory/PromptDocuments") {
  static readonly layer = Layer.effect(
    PromptDocuments,
    Effect.gen(function* () {
      const sql = yield* SqlClient
      const workspaces = yield* Workspaces
      const documents = yield* Repo.PromptDocumentsRepository
      const db = withDatabase(sql)

      const checkSlot = (slots: ReadonlyArray<string>, slot: string, where: string) =>
        slots.includes(slot)
          ? Effect.void
          : Effect.fail(
              new Invalid({
                code: "prompt_slot_unavailable",
                message: `There is no ${JSON.stringify(slot)} slot ${where}; slots here: ${slots.join(", ")}`
              })
            )

      /**
       * The host of the door's documents, once the caller may use it: a workspace must be seen
       * (else 404 like absence), then the slot must exist at the door, then a write needs standing.
       */
      const host = (caller: Caller, door: Door, slot: string | undefined, intent: "read" | "write") =>
        Effect.gen(function* () {
          if (door._tag === "Profile") {
            const { kind, id } = caller.user
            if (slot !== undefined) yield* checkSlot(profileSlots[kind], slot, `on a ${kind}'s profile`)
            return { kind: "user", id } satisfies Repo.Host
          }
          const workspace = yield* workspaces.read(caller, door.workspaceId)
          if (slot !== undefined) yield* checkSlot(workspaceSlots, slot, "on a workspace")
          if (intent === "write") yield* workspaces.writable(caller, door.workspaceId)
          return { kind: "workspace", id: workspace.id } satisfies Repo.Host
        })

      const notFound = (slot: string) =>
        Effect.fail(new Absent({ code: "prompt_document_not_found", message: `The ${slot} slot holds no document` }))

      /** The document to store, or the refusal that says what the slot does not take. */
      const checkDocument = (slot: string, input: WriteInput) =>
        Effect.gen(function* () {
          const { content } = input
          const role = input.role ?? "system"
          if (contentOnly(slot) && role !== "system") {
            return yield* invalid(`prompt_document.role: the ${slot} slot takes role system only`)
          }
          const macros = macrosIn(content)
          if (contentOnly(slot) && macros.length > 0) {
            return yield* invalid(
              `prompt_document.content: the ${slot} slot takes no macros (found ${macros.map((m) => `{{${m}}}`).join(", ")})`
            )
          }
          const unknown = macros.filter((name) => !(macroNames as ReadonlyArray<string>).includes(name))
          if (unknown.length > 0) {
            return yield* new Invalid({
              code: "prompt_document_macro_unknown",
              message: `Unknown macros: ${unknown.map((m) => `{{${m}}}`).join(", ")}; known: ${macroNames.map((m) => `{{${m}}}`).join(", ")}`
            })
          }
          return { slot, role, content, bytesize: Buffer.byteLength(content, "utf8") }
        })

      const list = (caller: Caller, door: Door) =>
        db(Effect.flatMap(host(caller, door, undefined, "read"), (where) => documents.listDocuments(where)))

      const read = (caller: Caller, door: Door, slot: string) =>
        db(
          Effect.gen(function* () {
            const where = yield* host(caller, door, slot, "read")
            const row = yield* documents.findDocument(where, slot)
            if (!row) return yield* notFound(slot)
            return row
          })
        )

      const write = (caller: Caller, door: Door, slot: string, input: WriteInput) =>
        db(
          Effect.gen(function* () {
            const where = yield* host(caller, door, slot, "write")
            const document = yield* checkDocument(slot, input)
            return yield* documents.writeDocument(where, document, yield* now)
          })
        )

      const remove = (caller: Caller, door: Door, slot: string) =>
        db(
          Effect.gen(function* () {
            const where = yield* host(caller, door, slot, "write")
            if (!(yield* documents.deleteDocument(where, slot))) return yield* notFound(slot)
          })
        )

      return PromptDocuments.of({ list, read, write, remove })
    })
  ).pipe(Layer.provide(Workspaces.layer))
}
