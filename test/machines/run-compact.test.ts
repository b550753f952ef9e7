// The run machine's compact task verb (runs supplement, task verbs): a model task failed on context
// size gets a hidden kernel summarizer appended and is re-queued after it, its next round carrying
// the summary; anything else is refused not_compactable, after the task verbs' common refusals.
import type { CompiledTaskSpec } from "@troupe/machines/run/context"
import { describe, expect, it } from "vitest"
import { type Action, baseTask, createRun, named, type Snapshot, step, taskOf } from "../support/runMachine.ts"

const model = (key: string, continues: string | null, retry = 0): CompiledTaskSpec => ({
  ...baseTask(key, continues === null ? [] : [continues]),
  kind: "model_task",
  mainline: true,
  onFailure: "halt",
  step: continues === null ? 0 : 1,
  model: { model: "local/tiny", retry, tools: [], continues }
})

const replied = (snapshot: Snapshot, ref: string, status: "completed" | "failed", errorCode: string | null = null) =>
  step(snapshot, { type: "inference.replied", requestId: "r", status, errorCode, declined: false, usage: null, ref })

const compact = (snapshot: Snapshot, key: string, model: string | null = null) =>
  step(snapshot, { type: "task.compact", key, model, at: 5_000 })

/** m1 answered; m2 (continuing it, retry 2) refused by its model as over the window. */
const overflowed = () => {
  const [started] = step(createRun([model("m1", null), model("m2", "m1", 2)]), { type: "run.start", at: 1_000 })
  const [answered] = replied(started, "m1#1#1", "completed")
  return replied(answered, "m2#1#1", "failed", "context_window_exceeded")
}

const refusal = (actions: ReadonlyArray<Action>) => named(actions, "run.refuse")[0]?.params.reason

describe("run machine: compact", () => {
  it("a round failed on context size fails its task at once with that key, its step's retries unspent", () => {
    const [failed, actions] = overflowed()
    expect(taskOf(failed, "m2")).toMatchObject({ status: "failed", error: { key: "context_window_exceeded" } })
    expect(named(actions, "run.openRound")).toEqual([])
    expect(failed.context.status).toBe("needs_attention")
    expect(failed.context.attention).toMatchObject({ reason: "halt_failure", blockedTaskKeys: ["m2"] })
  })

  it("compact: model task failed on context size → summarizer appended and the task re-queued", () => {
    const [failed] = overflowed()
    const [compacted, actions] = compact(failed, "m2")
    const inserted = named(actions, "run.insertTasks")[0]!.params
    expect(inserted.firstPosition).toBe(2)
    expect(inserted.tasks).toEqual([
      expect.objectContaining({
        key: "m2-summary-1",
        kind: "model_task",
        origin: "kernel",
        visibility: "hidden",
        mainline: false,
        after: [],
        onFailure: "halt",
        revision: 1,
        step: 1,
        model: { model: "local/tiny", retry: 2, tools: [], continues: null, summarizes: "m2" }
      })
    ])
    // The summarizer starts at once and reads the failed round as it was asked.
    expect(taskOf(compacted, "m2-summary-1").status).toBe("running")
    expect(named(actions, "run.openRound").map((action) => action.params)).toEqual([
      expect.objectContaining({
        key: "m2-summary-1",
        ref: "m2-summary-1#1#1",
        model: "local/tiny",
        tools: [],
        summarizes: { key: "m2", model: "local/tiny", continues: "m1", results: [], calls: [], mainline: true }
      })
    ])
    // The task: a new generation, waiting after the summarizer, its failure cleared.
    expect(taskOf(compacted, "m2")).toMatchObject({ status: "waiting", generation: 2, error: null, failures: 0 })
    expect(taskOf(compacted, "m2").spec.after).toEqual(["m1", "m2-summary-1"])
    expect(compacted.context.status).toBe("running")
    expect(compacted.context.attention).toBeNull()
    const rows = named(actions, "run.recordTasks")[0]!.params.tasks
    expect(rows.find((row: any) => row.key === "m2")).toMatchObject({
      status: "waiting",
      after: ["m1", "m2-summary-1"]
    })

    // The summary done, the task's next round carries it in place of its history.
    const [summarized, reasked] = replied(compacted, "m2-summary-1#1#1", "completed")
    expect(named(reasked, "run.openRound").map((action) => action.params)).toEqual([
      expect.objectContaining({ key: "m2", ref: "m2#2#2", continues: "m1", summary: "m2-summary-1" })
    ])
    const [done] = replied(summarized, "m2#2#2", "completed")
    expect(done.context.status).toBe("completed")
  })

  it("compact names the summarizer's model when the verb gives one", () => {
    const [compacted] = compact(overflowed()[0], "m2", "local/echo")
    expect(taskOf(compacted, "m2-summary-1").spec.model).toMatchObject({ model: "local/echo", summarizes: "m2" })
  })

  it("a task compacted again gets the next summarizer, which reads the round under the earlier summary", () => {
    const [compacted] = compact(overflowed()[0], "m2")
    const [summarized] = replied(compacted, "m2-summary-1#1#1", "completed")
    const [again] = replied(summarized, "m2#2#2", "failed", "context_window_exceeded")
    const [twice, actions] = compact(again, "m2")
    expect(taskOf(twice, "m2")).toMatchObject({ status: "waiting", generation: 3 })
    expect(taskOf(twice, "m2").spec.after).toEqual(["m1", "m2-summary-1", "m2-summary-2"])
    expect(named(actions, "run.openRound")[0]!.params).toMatchObject({
      key: "m2-summary-2",
      summarizes: { key: "m2", summary: "m2-summary-1" }
    })
    const [, reasked] = replied(twice, "m2-summary-2#1#1", "completed")
    expect(named(reasked, "run.openRound")[0]!.params).toMatchObject({ key: "m2", summary: "m2-summary-2" })
  })

  it("else 409 not_compactable: a completed task, a task failed otherwise, a summarizer, a resolved failure", () => {
    const [failed] = overflowed()
    const [unchanged, completed] = compact(failed, "m1")
    expect(refusal(completed)).toBe("not_compactable")
    expect(unchanged.context).toEqual(failed.context)

    const [started] = step(createRun([model("m1", null)]), { type: "run.start", at: 1_000 })
    const [otherwise] = replied(started, "m1#1#1", "failed", "provider_error")
    expect(refusal(compact(otherwise, "m1")[1])).toBe("not_compactable")

    const [three] = step(createRun([model("m1", null), model("m2", "m1"), model("m3", "m2")]), {
      type: "run.start",
      at: 1_000
    })
    const [overflowing] = replied(
      replied(three, "m1#1#1", "completed")[0],
      "m2#1#1",
      "failed",
      "context_window_exceeded"
    )
    const [compacted] = compact(overflowing, "m2")
    const [summaryOverflowed] = replied(compacted, "m2-summary-1#1#1", "failed", "context_window_exceeded")
    expect(taskOf(summaryOverflowed, "m2-summary-1").error).toEqual({ key: "context_window_exceeded" })
    expect(refusal(compact(summaryOverflowed, "m2-summary-1")[1])).toBe("not_compactable")

    const [abandoned] = step(overflowing, { type: "task.abandon", key: "m2", at: 4_000 })
    expect(abandoned.context.status).toBe("running")
    expect(refusal(compact(abandoned, "m2")[1])).toBe("not_compactable")
  })

  it("compact on a paused run appends and re-queues, nothing starts until resume; a force pause re-asks the summarizer", () => {
    const [paused] = step(overflowed()[0], { type: "run.pause", force: false, at: 2_000 })
    const [compacted, actions] = compact(paused, "m2")
    expect(compacted.context.status).toBe("paused")
    expect(named(actions, "run.openRound")).toEqual([])
    expect(taskOf(compacted, "m2-summary-1").status).toBe("waiting")
    const [resumed, resuming] = step(compacted, { type: "run.resume", at: 6_000 })
    expect(named(resuming, "run.openRound").map((action) => action.params.ref)).toEqual(["m2-summary-1#1#1"])

    const [forced] = step(resumed, { type: "run.pause", force: true, at: 7_000 })
    expect(taskOf(forced, "m2-summary-1").status).toBe("waiting")
    const [again, reopening] = step(forced, { type: "run.resume", at: 8_000 })
    expect(named(reopening, "run.openRound").map((action) => action.params.ref)).toEqual(["m2-summary-1#1#2"])
    // The aborted round's late answer is ignored; the task still waits on the summarizer.
    const [late, ignored] = replied(again, "m2-summary-1#1#1", "completed")
    expect(ignored).toEqual([])
    expect(taskOf(late, "m2")).toMatchObject({ status: "waiting", generation: 2 })
  })

  it("a summarizer that fails holds the task (halt_failure on the summarizer); abandoned, the task is re-asked without a summary", () => {
    const [compacted] = compact(overflowed()[0], "m2")
    const failing = ["m2-summary-1#1#1", "m2-summary-1#1#2", "m2-summary-1#1#3"].reduce(
      (snapshot, ref) => replied(snapshot, ref, "failed", "provider_error")[0],
      compacted
    )
    expect(failing.context.status).toBe("needs_attention")
    expect(failing.context.attention).toMatchObject({ reason: "halt_failure", blockedTaskKeys: ["m2-summary-1"] })
    expect(taskOf(failing, "m2").status).toBe("waiting")
    const [abandoned, actions] = step(failing, { type: "task.abandon", key: "m2-summary-1", at: 6_000 })
    const [reasked] = named(actions, "run.openRound").map((action) => action.params)
    expect(reasked).toMatchObject({ key: "m2", ref: "m2#2#2" })
    expect(reasked.summary).toBeUndefined()
    expect(abandoned.context.status).toBe("running")
  })

  it("the task verbs' own refusals come first: not_adjudicable on a finished run, not_found for an unknown key", () => {
    const [failed] = overflowed()
    const [stopped] = step(failed, { type: "run.stop", force: true, at: 4_000 })
    expect(stopped.context.status).toBe("canceled")
    expect(refusal(compact(stopped, "m2")[1])).toBe("not_adjudicable")
    expect(refusal(compact(failed, "nope")[1])).toBe("not_found")
  })
})
