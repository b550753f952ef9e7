// The inference request machine, one test per row of the spec's table ("InferenceRequest") and the
// supplement's attempt rules: what each transition emits and asks the runtime to do.
import {
  attemptBudget,
  inferenceRequestMachine,
  nextCandidate
} from "@troupe/machines/inferenceRequest/inferenceRequest.machine"
import { machines, migrateSnapshot, type PersistedSnapshot } from "@troupe/machines/registry"
import { describe, expect, it } from "vitest"
import { initialTransition, transition } from "xstate"

type Snapshot = ReturnType<typeof initialTransition<typeof inferenceRequestMachine>>[0]
type Event = Parameters<typeof transition<typeof inferenceRequestMachine>>[2]

const input = (fallbacks: ReadonlyArray<{ model: string; skip: any }> = []) => ({
  publicId: "01900000-0000-7000-8000-000000000001",
  routes: [{ model: "local/script", skip: null }, ...fallbacks],
  timeoutMs: 300_000
})

const start = (fallbacks?: ReadonlyArray<{ model: string; skip: any }>) =>
  initialTransition(inferenceRequestMachine, input(fallbacks))

const step = (snapshot: Snapshot, event: Event) => transition(inferenceRequestMachine, snapshot, event)

/** Emitted items as `type(status)`; other actions by name. */
const described = (actions: ReadonlyArray<{ type: string; params?: any }>) =>
  actions.flatMap((action) => {
    if (action.type === "xstate.emit") {
      const item = action.params.event
      return [`${item.type}${item.status ? `(${item.status})` : item.reason ? `(${item.reason})` : ""}`]
    }
    if (action.type === "xstate.raise") return [`timer:${action.params.id}`]
    if (action.type === "xstate.cancel") return [`cancel:${action.params.sendId}`]
    return action.type.startsWith("xstate.") ? [] : [action.type]
  })

const usage = { input_tokens: 3, output_tokens: 1 }

/** The executed actions, emits included (xstate's type leaves them out). */
const loose = (actions: ReadonlyArray<unknown>) => actions as ReadonlyArray<{ type: string; params?: any }>
const running = (snapshot: Snapshot, attempt = 1) => step(snapshot, { type: "inference.started", attempt })[0]

describe("inferenceRequest machine", () => {
  it("acceptance: queued, run_status queued, the deadline timer and the first provider call", () => {
    const [snapshot, actions] = start()
    expect(snapshot.value).toEqual({ live: "queued" })
    expect(described(actions)).toEqual(["run_status(queued)", "timer:deadline", "inference.callProvider"])
  })

  it("acceptance with its input refused at sealing: failed at once, no provider call, told declined", () => {
    const [snapshot, actions] = initialTransition(inferenceRequestMachine, {
      ...input(),
      refusal: "unsupported_input_media",
      replyTo: { kind: "conversation", actorId: "c" }
    })
    expect(snapshot.value).toBe("failed")
    expect(described(actions)).not.toContain("inference.callProvider")
    expect(described(actions)).toContain("run_status(failed)")
    const told = loose(actions).find((action) => action.type === "inference.replyToAsker")
    expect(told?.params.event).toMatchObject({
      status: "failed",
      errorCode: "unsupported_input_media",
      declined: true,
      usage: null
    })
  })

  it("InferenceRequest: queued --start--> running", () => {
    const [queued] = start()
    const [next, actions] = step(queued, { type: "inference.started", attempt: 1 })
    expect(next.value).toEqual({ live: "running" })
    expect(described(actions)).toEqual(["inference.recordStatus", "run_status(running)"])
    expect(step(queued, { type: "inference.started", attempt: 2 })[0]).toBe(queued)
  })

  it("InferenceRequest: running --finish--> completed (usage, then run_status and result last)", () => {
    const [done, actions] = step(running(start()[0]), {
      type: "inference.finished",
      attempt: 1,
      usage,
      outcome: { timing: { duration_ms: 4 } }
    })
    expect(done.value).toBe("completed")
    expect(described(actions)).toEqual([
      "cancel:deadline",
      "cancel:retry",
      "inference.recordUsage",
      "usage",
      "inference.recordStatus",
      "inference.recordResult",
      "run_status(completed)",
      "result(completed)"
    ])
  })

  it("InferenceRequest: queued or running --cancellation--> canceled, without a rollback", () => {
    const [queued] = start()
    const [canceled, actions] = step(queued, { type: "inference.cancel" })
    expect(canceled.value).toBe("canceled")
    expect(described(actions)).not.toContain("rollback(retry)")
    expect(described(actions)).toContain("result(canceled)")
    expect(step(running(queued), { type: "inference.cancel" })[0].value).toBe("canceled")
    expect(step(canceled, { type: "inference.cancel" })[0]).toBe(canceled)
  })

  it("the deadline: timed_out with error timed_out", () => {
    const [timedOut, actions] = step(running(start()[0]), { type: "inference.deadline" })
    expect(timedOut.value).toBe("timed_out")
    const result = loose(actions).find((action) => action.type === "inference.recordResult")
    expect(result?.params).toEqual({ status: "timed_out", error: { code: "timed_out" } })
  })

  it("InferenceRequest: running --retryable failure, attempts left--> waiting, then queued after the backoff", () => {
    const [waiting, actions] = step(running(start()[0]), {
      type: "inference.failed",
      attempt: 1,
      code: "rate_limited",
      retryAfterMs: 2000
    })
    expect(waiting.value).toEqual({ live: "waiting" })
    expect(described(actions)).toEqual([
      "inference.dropOutput",
      "rollback(retry)",
      "inference.recordStatus",
      "run_status(queued)",
      "timer:retry"
    ])
    const timer = loose(actions).find((action) => action.type === "xstate.raise")
    expect(timer?.params.delay).toBe(2000)
    const [queued, retried] = step(waiting, { type: "inference.retry" })
    expect(queued.value).toEqual({ live: "queued" })
    expect(retried.find((action) => action.type === "inference.callProvider")?.params).toEqual({
      attempt: 2,
      model: "local/script",
      earlierAttemptsOnModel: 1
    })
  })

  it("InferenceRequest: running --second retryable failure of a route, a candidate--> queued on it with model_change", () => {
    let snapshot = running(start([{ model: "local/echo", skip: null }])[0])
    snapshot = step(snapshot, { type: "inference.failed", attempt: 1, code: "provider_error" })[0]
    snapshot = running(step(snapshot, { type: "inference.retry" })[0], 2)
    const [switched, actions] = step(snapshot, { type: "inference.failed", attempt: 2, code: "provider_overloaded" })
    expect(switched.value).toEqual({ live: "queued" })
    const queued = loose(actions).find(
      (action) => action.type === "xstate.emit" && action.params.event.status === "queued"
    )
    expect(queued?.params.event).toMatchObject({
      model: "local/echo",
      attempt: 3,
      model_change: { from: "local/script", to: "local/echo", reason: "provider_overloaded" }
    })
  })

  it("InferenceRequest: running --classifier refusal, next permitted candidate--> queued at once, skipping the unfit", () => {
    const [queued, actions] = step(
      running(
        start([
          { model: "local/embed", skip: "workload_mismatch" },
          { model: "local/echo", skip: null }
        ])[0]
      ),
      { type: "inference.refused", attempt: 1, kind: "refused", category: "policy", usage }
    )
    expect(queued.value).toEqual({ live: "queued" })
    expect(described(actions)).toEqual([
      "inference.recordUsage",
      "usage",
      "inference.dropOutput",
      "rollback(refused)",
      "inference.recordStatus",
      "run_status(queued)",
      "inference.callProvider"
    ])
    const item = loose(actions).find(
      (action) => action.type === "xstate.emit" && action.params.event.status === "queued"
    )
    expect(item?.params.event.model_skips).toEqual([{ model: "local/embed", reason: "workload_mismatch" }])
  })

  it("a blocked answer or a refusal without a candidate fails model_refused; unavailable models never retry", () => {
    const [blocked] = step(running(start([{ model: "local/echo", skip: null }])[0]), {
      type: "inference.refused",
      attempt: 1,
      kind: "blocked",
      usage
    })
    expect(blocked.value).toBe("failed")
    const [unavailable, actions] = step(running(start()[0]), {
      type: "inference.failed",
      attempt: 1,
      code: "provider_model_unavailable"
    })
    expect(unavailable.value).toBe("failed")
    expect(loose(actions).find((action) => action.type === "inference.recordResult")?.params.error).toEqual({
      code: "provider_model_unavailable"
    })
  })

  it(`the attempt budget: after ${attemptBudget} attempts a retryable failure fails with attempt_budget_spent`, () => {
    let snapshot = running(start()[0])
    for (let attempt = 1; attempt < attemptBudget; attempt++) {
      snapshot = step(snapshot, { type: "inference.failed", attempt, code: "provider_error" })[0]
      snapshot = running(step(snapshot, { type: "inference.retry" })[0], attempt + 1)
    }
    const [failed, actions] = step(snapshot, {
      type: "inference.failed",
      attempt: attemptBudget,
      code: "provider_error"
    })
    expect(failed.value).toBe("failed")
    expect(loose(actions).find((action) => action.type === "inference.recordResult")?.params.error).toEqual({
      code: "provider_error",
      attempt_budget_spent: true
    })
  })

  it("a lost attempt (its runner died) is rolled back and retried at once; reports of other attempts change nothing", () => {
    const snapshot = running(start()[0])
    const [queued, actions] = step(snapshot, { type: "inference.lost", attempt: 1 })
    expect(queued.value).toEqual({ live: "queued" })
    expect(described(actions)).toContain("rollback(retry)")
    expect(step(snapshot, { type: "inference.output", attempt: 2, items: [] })[0]).toBe(snapshot)
    expect(step(snapshot, { type: "inference.finished", attempt: 2, usage, outcome: { timing: {} } })[0]).toBe(snapshot)
  })

  it("InferenceRequest: terminal --DELETE--> tombstoned, reaped 30 days later", () => {
    const [canceled] = step(start()[0], { type: "inference.cancel" })
    const [tombstoned, actions] = step(canceled, { type: "inference.tombstone" })
    expect(tombstoned.value).toBe("tombstoned")
    expect(described(actions)).toEqual(["inference.recordTombstone", "timer:reap"])
    expect(step(running(start()[0]), { type: "inference.tombstone" })[0].value).toEqual({ live: "running" })
    const [reaped] = step(tombstoned, { type: "inference.reap" })
    expect(reaped.status).toBe("done")
  })

  it("an announced request announces each attempt as it starts, with its number and model; others never do", () => {
    const announce = { channel: "run_progress:r", frame: { type: "round_started", task_key: "k", request_bytes: 9 } }
    const [queued] = initialTransition(inferenceRequestMachine, {
      ...input([{ model: "local/echo", skip: null }]),
      announce
    })
    const announced = (actions: ReadonlyArray<unknown>) =>
      loose(actions).filter((action) => action.type === "inference.announceAttempt")
    let [snapshot, actions] = step(queued, { type: "inference.started", attempt: 1 })
    expect(announced(actions).map((action) => action.params)).toEqual([
      { channel: "run_progress:r", frame: { ...announce.frame, attempt: 1, model: "local/script" } }
    ])
    snapshot = step(snapshot, { type: "inference.refused", attempt: 1, kind: "refused", usage })[0]
    ;[, actions] = step(snapshot, { type: "inference.started", attempt: 2 })
    expect(announced(actions).map((action) => action.params.frame)).toEqual([
      { ...announce.frame, attempt: 2, model: "local/echo" }
    ])
    expect(announced(step(start()[0], { type: "inference.started", attempt: 1 })[1])).toEqual([])
  })

  it("a version-2 snapshot (no announcement) migrates unannounced and steps: its next attempts announce nothing", () => {
    const v2: PersistedSnapshot = {
      status: "active",
      value: { live: "running" },
      context: {
        publicId: "01900000-0000-7000-8000-000000000001",
        routes: [
          { model: "local/script", skip: null },
          { model: "local/echo", skip: null }
        ],
        timeoutMs: 300_000,
        replyTo: null,
        route: 0,
        attempt: 1,
        routeFailures: 0,
        retryableFailures: 0,
        attemptsByModel: { "local/script": 1 },
        modelChange: null
      }
    }
    const migrated = migrateSnapshot(machines.inferenceRequest, v2, 2) as PersistedSnapshot
    expect(migrated.context).toMatchObject({ announce: null, replyTo: null })
    const restored = inferenceRequestMachine.resolveState({
      value: migrated.value,
      context: migrated.context as Snapshot["context"]
    })
    const [switched] = step(restored, { type: "inference.refused", attempt: 1, kind: "refused", usage })
    expect(switched.value).toEqual({ live: "queued" })
    const [started, actions] = step(switched, { type: "inference.started", attempt: 2 })
    expect(started.value).toEqual({ live: "running" })
    expect(described(actions)).toEqual(["inference.recordStatus", "run_status(running)"])
  })

  it("the next permitted candidate passes over unfit and already tried models", () => {
    const context = {
      ...start()[0].context,
      routes: [
        { model: "a/x", skip: null },
        { model: "a/y", skip: "unsupported_input_media" as const },
        { model: "a/x", skip: null },
        { model: "a/z", skip: null }
      ],
      attemptsByModel: { "a/x": 1 }
    }
    expect(nextCandidate(context)).toEqual({
      route: 3,
      skips: [
        { model: "a/y", reason: "unsupported_input_media" },
        { model: "a/x", reason: "already_tried" }
      ]
    })
  })
})
