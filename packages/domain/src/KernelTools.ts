// The kernel tool catalog: the service's own tools an agent may import, by canonical dotted name.
// Each has a wire alias (the model-facing function name, dots as underscores), a description and
// a JSON Schema for its input. Only canonical names are accepted where the spec says "exact".

export interface KernelTool {
  readonly canonical: string
  readonly wire: string
  readonly description: string
  readonly parameters: {
    readonly type: "object"
    readonly properties: Record<string, unknown>
    readonly required: ReadonlyArray<string>
  }
}

const tool = (
  canonical: string,
  description: string,
  properties: Record<string, unknown>,
  required: ReadonlyArray<string>
): KernelTool => ({
  canonical,
  wire: canonical.replace(/\./g, "_"),
  description,
  parameters: { type: "object", properties, required }
})

const path = { type: "string", description: "Memory path; its first segment is the scope" }
const expected = {
  expected_public_id: { type: ["string", "null"] },
  expected_lock_version: { type: ["integer", "null"] }
}

export const kernelTools: ReadonlyArray<KernelTool> = [
  tool("memory.list", "List memory documents", {}, []),
  tool("memory.show", "Read one memory document", { path }, ["path"]),
  tool(
    "memory.grep",
    "Search memory documents",
    { pattern: { type: "string" }, path, ignore_case: { type: "boolean" }, limit: { type: "integer" } },
    ["pattern"]
  ),
  tool("memory.write", "Create or replace a memory document", { path, content: { type: "string" }, ...expected }, [
    "path",
    "content"
  ]),
  tool(
    "memory.edit",
    "Replace text in a memory document",
    { path, old_text: { type: "string" }, new_text: { type: "string" }, ...expected },
    ["path", "old_text", "new_text"]
  ),
  tool("memory.delete", "Delete a memory document", { path, ...expected }, ["path"]),
  tool("store.get", "Read a store entry", { namespace: { type: "string" }, key: { type: "string" } }, ["key"]),
  tool("store.put", "Write a store entry", { namespace: { type: "string" }, key: { type: "string" }, value: {} }, [
    "key",
    "value"
  ]),
  tool("store.delete", "Delete a store entry", { namespace: { type: "string" }, key: { type: "string" } }, ["key"]),
  tool("human.ask", "Ask the steward a question and wait for the answer", { question: { type: "string" } }, [
    "question"
  ]),
  tool("run.wait", "Wait until a time or for an event", { until: { type: "string" } }, ["until"]),
  tool(
    "conversation.send",
    "Send an input to a conversation",
    { conversation_public_id: { type: "string" }, content: { type: "string" } },
    ["conversation_public_id", "content"]
  )
]

const byCanonical = new Map(kernelTools.map((t) => [t.canonical, t]))
const byWire = new Map(kernelTools.map((t) => [t.wire, t]))

export const kernelTool = (canonical: string): KernelTool | undefined => byCanonical.get(canonical)

/** True when `name` is a kernel tool's wire alias (and not itself canonical). */
export const isKernelWireAlias = (name: string): boolean => byWire.has(name) && !byCanonical.has(name)
