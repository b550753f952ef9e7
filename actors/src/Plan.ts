// Turns the actions a transition returned into what one step writes: timer rows for delayed
// raises, deletions for cancels, outbox items for emits, row handlers and job rows for named
// effect requests. Pure; an action the binding does not know is a defect of the binding.
import type { Binding } from "./Binding.ts"

export interface ExecutableAction {
  readonly type: string
  readonly params?: unknown
}

export type TimerOp =
  | { readonly op: "set"; readonly timerId: string; readonly event: unknown; readonly delayMillis: number }
  | { readonly op: "cancel"; readonly timerId: string }

export interface StepPlan {
  /** Timer settings and cancellations, in the order the machine asked for them. */
  readonly timers: ReadonlyArray<TimerOp>
  readonly emits: ReadonlyArray<{ readonly type: string; readonly payload: Record<string, unknown> }>
  readonly rows: ReadonlyArray<{ readonly name: string; readonly params: unknown }>
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly params: unknown; readonly actionIndex: number }>
  /** Every action's type, for the journal. */
  readonly actionTypes: ReadonlyArray<string>
}

export class UnboundAction extends Error {
  override readonly name = "UnboundAction"
}

/** A built-in action's params, as XState hands them over (raise, cancel, emit). */
interface BuiltinParams {
  readonly event?: unknown
  readonly id?: unknown
  readonly delay?: unknown
  readonly sendId?: unknown
}

const builtinParams = (params: unknown): BuiltinParams => (typeof params === "object" && params !== null ? params : {})

const emitted = (event: unknown): { readonly type: string; readonly payload: Record<string, unknown> } => {
  if (typeof event !== "object" || event === null || !("type" in event) || typeof event.type !== "string") {
    throw new UnboundAction(`an emitted item needs a type`)
  }
  const { type, ...payload } = event
  return { type, payload }
}

export const planActions = (binding: Binding, actions: ReadonlyArray<ExecutableAction>, seq: bigint): StepPlan => {
  const plan = {
    timers: [] as Array<TimerOp>,
    emits: [] as Array<StepPlan["emits"][number]>,
    rows: [] as Array<StepPlan["rows"][number]>,
    jobs: [] as Array<StepPlan["jobs"][number]>,
    actionTypes: actions.map((action) => action.type)
  }
  actions.forEach((action, index) => {
    const params = builtinParams(action.params)
    switch (action.type) {
      case "xstate.raise":
        // An undelayed raise is handled inside the transition; a delayed one is a timer row.
        if (typeof params.delay === "number") {
          plan.timers.push({
            op: "set",
            timerId: typeof params.id === "string" ? params.id : `${seq}:${index}`,
            event: params.event,
            delayMillis: params.delay
          })
        }
        return
      case "xstate.cancel":
        plan.timers.push({ op: "cancel", timerId: String(params.sendId) })
        return
      case "xstate.emit":
        plan.emits.push(emitted(params.event))
        return
      case "xstate.assign":
        return
    }
    if (action.type in binding.rows) plan.rows.push({ name: action.type, params: action.params })
    else if (action.type in binding.jobs)
      plan.jobs.push({ name: action.type, params: action.params, actionIndex: index })
    else throw new UnboundAction(`${binding.kind}: no row handler or job for action ${action.type}`)
  })
  return plan
}

/** What a step's timer operations leave: the last setting or cancellation of each timer id. */
export const netTimers = (timers: ReadonlyArray<TimerOp>) => {
  const last = new Map<string, TimerOp>()
  for (const timer of timers) last.set(timer.timerId, timer)
  const settled = [...last.values()]
  return {
    set: settled.filter((timer) => timer.op === "set"),
    cancel: settled.filter((timer) => timer.op === "cancel").map((timer) => timer.timerId)
  }
}

/** A state value as text: "active", "running.waiting", or "a.x,b.y" for parallel states. */
export const stateText = (value: unknown): string => {
  if (typeof value === "string") return value
  if (value === null || typeof value !== "object") return String(value)
  return Object.entries(value as Record<string, unknown>)
    .map(([key, child]) => {
      const inner = stateText(child)
      return inner === "" || (typeof child === "object" && child !== null && Object.keys(child).length === 0)
        ? key
        : `${key}.${inner}`
    })
    .join(",")
}
