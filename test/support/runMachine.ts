// What the run machine's tests share: task spec templates, the machine created and stepped
// purely (xstate's initialTransition and transition), and lookups on its snapshot and actions.
import type { CompiledTaskSpec } from "@troupe/machines/run/context"
import { runMachine } from "@troupe/machines/run/run.machine"
import { initialTransition, transition } from "xstate"

export type Snapshot = ReturnType<typeof initialTransition<typeof runMachine>>[0]
export type Event = Parameters<typeof transition<typeof runMachine>>[2]
export type Action = { type: string; params?: any }

/** An author's visible tool task with nothing set yet, its structural dependencies its `after`. */
export const baseTask = (key: string, after: Array<string> = []): CompiledTaskSpec => ({
  key,
  kind: "tool_task",
  awaitKind: null,
  origin: "author",
  visibility: "visible",
  mainline: false,
  after,
  structural: after,
  results: [],
  onFailure: "propagate",
  revision: 1,
  step: 0,
  expansionParent: null,
  tool: null,
  model: null,
  ask: null,
  wait: null,
  join: null
})

/** A mainline model task on local/script offering `tools`, halting the run when it fails. */
export const modelTask = (key: string, tools: Array<string>, after: Array<string> = []): CompiledTaskSpec => ({
  ...baseTask(key, after),
  kind: "model_task",
  mainline: true,
  onFailure: "halt",
  model: { model: "local/script", retry: 0, tools, continues: null }
})

/** The machine created on `tasks` (the last one its deliverable): a standalone bypass run unless `input` says otherwise. */
export const createRun = (tasks: Array<CompiledTaskSpec>, input: Record<string, unknown> = {}) =>
  initialTransition(runMachine, {
    publicId: "run-1",
    conversationId: null,
    turnId: null,
    creatorId: "creator",
    creatorApplicationId: null,
    approvalMode: "bypass",
    approvalRules: [],
    tasks,
    deliverable: tasks.at(-1)!.key,
    at: 0,
    ...input
  } as never)[0]

export const step = (snapshot: Snapshot, event: Event) =>
  transition(runMachine, snapshot, event) as [Snapshot, Array<Action>]

/** The machine created on `tasks` (see createRun) and started at 1 000. */
export const startRun = (tasks: Array<CompiledTaskSpec>, input: Record<string, unknown> = {}) =>
  step(createRun(tasks, input), { type: "run.start", at: 1_000 })

/** The round `ref` answered, completed, with `toolCalls` when given. */
export const roundReplied = (snapshot: Snapshot, ref: string, toolCalls?: ReadonlyArray<Record<string, unknown>>) =>
  step(snapshot, {
    type: "inference.replied",
    requestId: "r",
    status: "completed",
    errorCode: null,
    declined: false,
    usage: null,
    ref,
    ...(toolCalls === undefined ? {} : { toolCalls })
  })

/** The first round of model task m (ref m#1#1) answered, completed, with `toolCalls`. */
export const firstRoundReplied = (snapshot: Snapshot, toolCalls: ReadonlyArray<Record<string, unknown>>) =>
  roundReplied(snapshot, "m#1#1", toolCalls)

export const named = (actions: ReadonlyArray<Action>, type: string) => actions.filter((action) => action.type === type)
export const taskOf = (snapshot: Snapshot, key: string) => snapshot.context.tasks.find((t) => t.spec.key === key)!
