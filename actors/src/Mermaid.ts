// A machine's statechart as a Mermaid stateDiagram, for operators and the state visualizer.
// State ids are their paths joined by "__" so nested states stay unique.
import type { AnyStateMachine } from "xstate"

interface Node {
  readonly key: string
  readonly path: ReadonlyArray<string>
  readonly type: string
  readonly states: Record<string, Node>
  readonly initial?: { readonly target?: ReadonlyArray<Node> }
  readonly transitions: Map<string, ReadonlyArray<{ readonly target?: ReadonlyArray<Node> }>>
}

/** The Mermaid id of a state: its path, e.g. "running__waiting". */
export const mermaidId = (path: ReadonlyArray<string>) => path.join("__")

const label = (event: string) => event.replace(/[:;]/g, " ")

export const toMermaid = (machine: AnyStateMachine): string => {
  const lines = ["stateDiagram-v2"]
  const visit = (node: Node, indent: string) => {
    const initial = node.initial?.target?.[0]
    if (initial && node.type !== "parallel") lines.push(`${indent}[*] --> ${mermaidId(initial.path)}`)
    for (const child of Object.values(node.states)) {
      const id = mermaidId(child.path)
      lines.push(`${indent}state "${child.key}" as ${id}`)
      if (Object.keys(child.states).length > 0) {
        lines.push(`${indent}state ${id} {`)
        visit(child, `${indent}  `)
        lines.push(`${indent}}`)
      }
      for (const [event, transitions] of child.transitions) {
        for (const transition of transitions) {
          const targets = transition.target && transition.target.length > 0 ? transition.target : [child]
          for (const target of targets) lines.push(`${indent}${id} --> ${mermaidId(target.path)}: ${label(event)}`)
        }
      }
      if (child.type === "final") lines.push(`${indent}${id} --> [*]`)
    }
  }
  visit(machine.root as unknown as Node, "  ")
  return lines.join("\n")
}
