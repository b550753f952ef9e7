// The kernel calls a run carries out itself (runs supplement "Tool catalog"): a model's memory
// calls (memory_read, _write, _edit, _ls, _grep, _delete), skill loads and tool searches, over the
// memory its creator reaches — its human's user/, the agent's own agent/ and the run's workspace/ —
// within the creator's memory_context_limit (arguments read as MemoryToolArguments.ts says; a
// hosted run's memory calls go through its conversation's memory door instead, its bindings:
// ConversationMemoryTools.ts), and the conversation tools (ConversationTools.ts). The call's input
// is on its task's row; its answer becomes the result the continuation reads (a refusal fails the
// call with its code); an edit or delete of a document it cannot read fails as that read does.
import { ConversationsRepository } from "@troupe/storage/repositories/Conversations"
import { RunsRepository } from "@troupe/storage/repositories/Runs"
import { Effect } from "effect"
import { renderConfiguration } from "../agents/AgentConfiguration.ts"
import { kernelTool } from "../executors/KernelTools.ts"
import { isObject } from "../kernel/Json.ts"
import { ceilingOf, type Memory, type Reach } from "../memory/Memory.ts"
import type { ConversationMailSlot } from "./ConversationMailSlot.ts"
import type { ConversationMemorySlot, MemoryVerbs } from "./ConversationMemorySlot.ts"
import { conversationTools } from "./ConversationTools.ts"
import { kernelDefinitionOf } from "./KernelImports.ts"
import { routeOverridden } from "./MemoryRouting.ts"
import { content, documentPath, editTexts, grepMembers, readWindow } from "./MemoryToolArguments.ts"

type Answer = {
  readonly outcome: "completed" | "failed"
  readonly result: Readonly<Record<string, unknown>>
  readonly errorKey: string | null
}

const answered = (output: string): Answer => ({
  outcome: "completed",
  result: { output, content: [{ type: "text", text: output }] },
  errorKey: null
})

const refused = (code: string, message: string): Answer => ({
  outcome: "failed",
  result: { output: message, content: [{ type: "text", text: message }], is_error: true },
  errorKey: code
})

const text = (value: unknown) => (typeof value === "string" ? value : "")

/** Every word of the query in the text (case-insensitive), or the exact name. */
const matches = (query: string, name: string, description: string) => {
  if (query === name) return true
  const words = query
    .toLowerCase()
    .split(/\s+/)
    .filter((word) => word !== "")
  const haystack = `${name} ${description}`.toLowerCase()
  return words.length > 0 && words.every((word) => haystack.includes(word))
}

/** A declared tool as tool_search reads it. */
interface Searched {
  readonly function: { readonly name: string; readonly description: string; readonly parameters: unknown }
  readonly runner_executor_public_id?: string
}

/**
 * tool_search: the creator's declared tools (deferred ones included; kernel entries and aliases as
 * the function blocks a round is offered) and the skills/ rows in reach that match, by exact name
 * or every word; names, input schemas and runner targets.
 */
const searchTools = (
  configuration: unknown,
  rows: ReadonlyArray<{ readonly path: string; readonly description: string | null }>,
  input: Readonly<Record<string, unknown>>
) => {
  const query = text(input.query)
  const limit = typeof input.limit === "number" && input.limit >= 1 && input.limit <= 20 ? input.limit : 5
  const tools = renderConfiguration(configuration)
    .tool_definitions.flatMap((tool): Array<Searched> => {
      if (tool.type === "function") return [tool]
      // A kernel entry is declared under its wire name (a deferred one is found only here).
      const wire = kernelTool(tool.name)?.wire
      const definition = wire === undefined ? undefined : kernelDefinitionOf(wire, tool.name, configuration)
      return definition === undefined ? [] : [definition]
    })
    .filter((tool) => matches(query, tool.function.name, tool.function.description))
    .slice(0, limit)
    .map((tool) => ({
      name: tool.function.name,
      description: tool.function.description,
      input_schema: tool.function.parameters,
      ...(tool.runner_executor_public_id === undefined
        ? {}
        : { runner_executor_public_id: tool.runner_executor_public_id })
    }))
  const skills = rows
    .flatMap((row) => {
      const [, second, ...rest] = row.path.split("/")
      return second === "skills" && rest.length > 0
        ? [{ name: rest.join("/"), description: row.description ?? "" }]
        : []
    })
    .filter((skill) => matches(query, skill.name, skill.description))
    .slice(0, limit)
  return { tools, skills }
}

/** What a run's kernel calls are carried out with: the memory rules, hosted runs' memory door, mail. */
interface Kernel {
  readonly memory: Memory["Service"]
  readonly conversationMemory: ConversationMemorySlot["Service"]
  readonly mail: ConversationMailSlot["Service"]
}

/** The memory verbs over one Reach. */
const verbsOf = (memory: Memory["Service"], reach: Reach): MemoryVerbs => ({
  list: () => memory.list(reach),
  show: (members) => memory.show(reach, members),
  grep: (members) => memory.grep(reach, members),
  write: (members) => memory.write(reach, members),
  edit: (members) => memory.edit(reach, members),
  remove: (members) => memory.remove(reach, members)
})

export const makeKernelCalls = (kernel: Kernel) => (runPublicId: string, key: string, canonical: string) =>
  Effect.gen(function* () {
    const { memory, conversationMemory, mail } = kernel
    const runs = yield* RunsRepository.make
    const run = yield* runs.findRun(runPublicId)
    const runId = run?.id
    const task = runId === undefined ? undefined : yield* runs.findTask(runId, key)
    const [creator] = run === undefined ? [] : yield* (yield* ConversationsRepository.make).speakers([run.creator_id])
    if (run === undefined || task === undefined || creator === undefined) {
      return refused("not_found", "The run or its call is gone")
    }
    // svc.memory overridden: the call is its provider's (MemoryRouting.ts), not the service's.
    const route = yield* routeOverridden(run, task, canonical)
    if (route === "not_served") {
      return refused("tool_not_served", "The tool provider serving this workspace's memory cannot take the call")
    }
    if (route !== undefined) return route
    const input = isObject(task.spec) ? task.spec : {}
    const user = {
      id: creator.id,
      accountId: 0n,
      kind: creator.kind as "agent" | "human",
      configuration: creator.configuration
    }
    const reach: Reach = {
      anchors: {
        user: { kind: "user", id: creator.steward_id ?? creator.id },
        workspace: { kind: "workspace", id: run.workspace_id },
        ...(creator.kind === "agent" ? { agent: { kind: "agent", id: creator.id } } : {})
      },
      ...ceilingOf(user),
      overridden: false
    }
    // A standalone run's memory calls reach its creator's memory; a hosted run's, its conversation's bindings.
    const conversationId = run.conversation_public_id
    const documents =
      conversationId === null
        ? verbsOf(memory, reach)
        : conversationMemory.bind({ ...run, conversation_public_id: conversationId })
    const conversation = yield* conversationTools(run, { key, generation: task.generation })
    const mailed = yield* mail.bind(run, { key, generation: task.generation })
    /** The observed pair of the document at `path` (null for both when it is absent). */
    const observed = (path: string) =>
      Effect.map(Effect.option(documents.show({ path })), (found) =>
        found._tag === "Some"
          ? { expected_public_id: found.value.public_id, expected_lock_version: found.value.lock_version }
          : { expected_public_id: null, expected_lock_version: null }
      )
    /** The pair of the document an edit or delete changes: its show's refusal when it cannot be read. */
    const existing = (path: string) =>
      Effect.map(documents.show({ path }), (found) => ({
        expected_public_id: found.public_id,
        expected_lock_version: found.lock_version
      }))
    const call: Effect.Effect<string, { readonly code: string; readonly message: string }> = (() => {
      switch (canonical) {
        case "svc.memory.read":
          return Effect.gen(function* () {
            const path = yield* documentPath(input, false)
            const window = yield* readWindow(input)
            const document = yield* documents.show({ path })
            const lines = document.content.split("\n")
            const from = (window.offset ?? 1) - 1
            return lines.slice(from, from + (window.limit ?? lines.length)).join("\n")
          })
        case "svc.memory.write":
          return Effect.gen(function* () {
            const path = yield* documentPath(input, true)
            const written = yield* content(input)
            const row = yield* documents.write({ path, content: written, ...(yield* observed(path)) })
            return `wrote ${row.path}`
          })
        case "svc.memory.edit":
          return Effect.gen(function* () {
            const path = yield* documentPath(input, true)
            const texts = yield* editTexts(input)
            const row = yield* documents.edit({ path, ...texts, ...(yield* existing(path)) })
            return `edited ${row.path}`
          })
        case "svc.memory.delete":
          return Effect.gen(function* () {
            const path = yield* documentPath(input, true)
            yield* documents.remove({ path, ...(yield* existing(path)) })
            return `deleted ${path}`
          })
        case "svc.memory.ls": {
          const path = text(input.path)
          return Effect.map(documents.list(), (rows) =>
            rows
              .map((row) => row.path)
              .filter((each) => path === "" || each.startsWith(path))
              .join("\n")
          )
        }
        case "svc.memory.grep":
          return Effect.flatMap(grepMembers(input), (members) =>
            Effect.map(documents.grep(members), (found) => JSON.stringify(found))
          )
        case "svc.tools.search":
          // Skills are listed as the memory calls reach them; a door refusing lists (svc.memory
          // overridden) leaves the declared tools to be found.
          return documents.list().pipe(
            Effect.catchIf(
              (refusal) => refusal.code === "memory_overridden",
              () => Effect.succeed([])
            ),
            Effect.map((rows) => JSON.stringify(searchTools(creator.configuration, rows, input)))
          )
        case "svc.skill.load": {
          // A skills/ row in the memory calls' reach: the agent's own first, then its human's, then the workspace's.
          const name = text(input.name)
          const rows = ["agent", "user", "workspace"].map((scope) =>
            Effect.option(documents.show({ path: `${scope}/skills/${name}` }))
          )
          return Effect.flatMap(Effect.all(rows), (found) => {
            const skill = found.find((each) => each._tag === "Some")
            return skill?._tag === "Some"
              ? Effect.succeed(skill.value.content)
              : Effect.fail({ code: "skill_unknown", message: `No skill named ${name} is in reach` })
          })
        }
        case "svc.conversation.read":
          return conversation.read(input)
        case "svc.conversation.search":
          return conversation.search(input)
        case "svc.conversation.status":
          return conversation.status(input)
        case "svc.conversation.cancel":
          return conversation.cancel(input)
        case "svc.conversation.send":
          return mailed.send(input)
        case "svc.conversation.spawn":
          return mailed.spawn(input)
        default:
          return Effect.fail({ code: "kernel_tool_unavailable", message: `${canonical} is not carried out by runs` })
      }
    })()
    return yield* call.pipe(
      Effect.map(answered),
      Effect.catch((refusal) => Effect.succeed(refused(refusal.code, refusal.message)))
    )
  })
