// What an envelope's steps name in the world (runners, models, tasks of other runs), read
// leniently so the caller can load the compiler's lookups first; and the append's tip_live test.
import { isObject } from "../kernel/Json.ts"

export interface NamedInSteps {
  /** Runner public ids named by tool routes. */
  readonly runners: ReadonlyArray<string>
  /** Model refs named by model steps. */
  readonly models: ReadonlyArray<string>
  /** Waits on a task of another run. */
  readonly foreignTasks: ReadonlyArray<{ readonly run: string; readonly task: string }>
}

/** Every runner, model and foreign task the steps name, each once; malformed parts are skipped. */
export const namedInSteps = (steps: unknown): NamedInSteps => {
  const runners = new Set<string>()
  const models = new Set<string>()
  const foreign = new Map<string, { readonly run: string; readonly task: string }>()
  const visit = (step: unknown): void => {
    if (Array.isArray(step)) {
      step.forEach(visit)
      return
    }
    if (!isObject(step)) return
    if (Array.isArray(step.parallel)) step.parallel.forEach(visit)
    const { tool, model, wait } = step
    if (isObject(tool) && isObject(tool.route) && typeof tool.route.runner_executor_public_id === "string") {
      runners.add(tool.route.runner_executor_public_id)
    }
    if (isObject(model) && isObject(model.model) && typeof model.model.model === "string") {
      models.add(model.model.model)
    }
    if (isObject(wait) && typeof wait.run_public_id === "string" && typeof wait.task === "string") {
      foreign.set(JSON.stringify([wait.run_public_id, wait.task]), { run: wait.run_public_id, task: wait.task })
    }
  }
  visit(steps)
  return { runners: [...runners], models: [...models], foreignTasks: [...foreign.values()] }
}

/** The envelope opens with a top-level model step (an append's tip_live check). */
export const firstStepIsModel = (steps: unknown): boolean =>
  Array.isArray(steps) && isObject(steps[0]) && Object.hasOwn(steps[0], "model")
