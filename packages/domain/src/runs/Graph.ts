// A run's graph (SUPPLEMENT "Runs and tasks", runs supplement "Run resource and projections"):
// its tasks as nodes in authoring order, the waits between them as edges (structural when the
// written order made them), and the same drawn as a Mermaid `flowchart TD`. Pure.
import type { TaskKind, TaskStatus, Visibility } from "@troupe/machines/run/context"
import type { RunRow, TaskRow } from "@troupe/storage/repositories/Runs"
import { factsOf, inAuthoringOrder, kindOf, type TaskFactsByKey, visibilityOf } from "./Projections.ts"

export interface GraphNodeView {
  readonly key: string
  readonly kind: TaskKind
  readonly lifetime: "conversation" | "turn"
  readonly wake: "auto" | "passive"
  readonly status: TaskStatus
  readonly visibility: Visibility
  readonly after: ReadonlyArray<string>
  readonly deliverable: boolean
  readonly input_from: ReadonlyArray<string>
  readonly result_from: ReadonlyArray<string>
  readonly mainline?: boolean
  readonly expansion_parent?: string
  /** A race's rule as written: `any`, or the quorum k. */
  readonly join?: { readonly until: "any" | number; readonly losers: "cancel" | "run_out" }
}

/** `to` waits on `from`. */
export interface GraphEdgeView {
  readonly from: string
  readonly to: string
  readonly structural: boolean
}

export interface RunGraphView {
  readonly nodes: ReadonlyArray<GraphNodeView>
  readonly edges: ReadonlyArray<GraphEdgeView>
  readonly mermaid: string
}

/** Fill and stroke per status class (every status a node holds gets its classDef line). */
const statusStyles: Readonly<Record<TaskStatus, string>> = {
  waiting: "fill:#f2f4f7,stroke:#98a2b3",
  needs_approval: "fill:#fef0c7,stroke:#dc6803",
  running: "fill:#d1e9ff,stroke:#1570ef",
  dispatched: "fill:#d1e9ff,stroke:#1570ef,stroke-dasharray:4 2",
  awaiting_input: "fill:#fef0c7,stroke:#dc6803,stroke-dasharray:4 2",
  completed: "fill:#d1fadf,stroke:#039855",
  failed: "fill:#fee4e2,stroke:#d92d20",
  canceled: "fill:#f2f4f7,stroke:#667085,stroke-dasharray:2 2",
  timed_out: "fill:#fee4e2,stroke:#d92d20,stroke-dasharray:4 2",
  uncertain: "fill:#fdead7,stroke:#e04f16",
  skipped: "fill:#ffffff,stroke:#d0d5dd,stroke-dasharray:2 2"
}

/**
 * What a model task reads as its own conversation: the round it continues (a continuation's
 * round, or the previous mainline round) and that round's call rows.
 */
const inputFromOf = (task: TaskRow, tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): ReadonlyArray<string> => {
  const continues = factsOf(task, specs).model?.continues ?? null
  if (continues === null) return []
  const calls = tasks.filter((each) => each.kind === "tool_task" && factsOf(each, specs).expansionParent === continues)
  return [continues, ...calls.map((call) => call.key)]
}

const nodeOf = (task: TaskRow, run: RunRow, tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): GraphNodeView => {
  const facts = factsOf(task, specs)
  const kind = kindOf(task)
  return {
    key: task.key,
    kind,
    lifetime: facts.lifetime ?? "conversation",
    wake: facts.wake ?? "auto",
    status: task.status,
    visibility: visibilityOf(task),
    after: facts.after,
    deliverable: task.key === run.deliverable_task_key,
    input_from: inputFromOf(task, tasks, specs),
    result_from: facts.results,
    ...(kind === "model_task" ? { mainline: task.mainline } : {}),
    ...(facts.expansionParent === null ? {} : { expansion_parent: facts.expansionParent }),
    ...(kind === "join_task" && facts.join !== null
      ? { join: { until: facts.join.until === 1 ? "any" : facts.join.until, losers: facts.join.losers } }
      : {})
  }
}

const edgesOf = (task: TaskRow, known: ReadonlySet<string>, specs: TaskFactsByKey): ReadonlyArray<GraphEdgeView> => {
  const facts = factsOf(task, specs)
  return [...new Set([...facts.after, ...facts.results])]
    .filter((from) => known.has(from))
    .map((from) => ({ from, to: task.key, structural: facts.structural.includes(from) }))
}

const labelOf = (key: string) => `"${key.replaceAll('"', "#quot;")}"`

/**
 * `flowchart TD`, one node `n<i>` per task labelled with its key (the deliverable drawn `[[…]]`)
 * and classed by its status; structural waits drawn `-->`, named ones (`after`, `results`,
 * `wait.task`) `-.->`; a classDef for each status drawn.
 */
const mermaidOf = (nodes: ReadonlyArray<GraphNodeView>, edges: ReadonlyArray<GraphEdgeView>): string => {
  const ids = new Map(nodes.map((node, index) => [node.key, `n${index}`]))
  const lines = [
    "flowchart TD",
    ...nodes.map((node) => {
      const label = labelOf(node.key)
      const shape = node.deliverable ? `[[${label}]]` : `[${label}]`
      return `  ${ids.get(node.key)}${shape}:::${node.status}`
    }),
    ...edges.map((edge) => `  ${ids.get(edge.from)} ${edge.structural ? "-->" : "-.->"} ${ids.get(edge.to)}`),
    ...(Object.keys(statusStyles) as Array<TaskStatus>)
      .filter((status) => nodes.some((node) => node.status === status))
      .map((status) => `  classDef ${status} ${statusStyles[status]}`)
  ]
  return lines.join("\n")
}

/** `GET …/runs/{id}/graph`. */
export const graphOf = (run: RunRow, tasks: ReadonlyArray<TaskRow>, specs: TaskFactsByKey): RunGraphView => {
  const ordered = inAuthoringOrder(tasks)
  const known = new Set(ordered.map((task) => task.key))
  const nodes = ordered.map((task) => nodeOf(task, run, ordered, specs))
  const edges = ordered.flatMap((task) => edgesOf(task, known, specs))
  return { nodes, edges, mermaid: mermaidOf(nodes, edges) }
}
