// Runs for agent programs (member plane, runs supplement) over the contract's runs group: create
// and append with an Idempotency-Key (saying whether the answer was a replay), read the trace,
// list, the run verbs, task reads and task verbs, graph, phases, transcript, delete. Refusals
// are the contract's error classes; request bodies are typed here (the route reads them loosely).
import { RunsGroup } from "@troupe/contracts/member/Runs"
import { Effect } from "effect"
import { HttpClient, type HttpClientResponse } from "effect/http"
import { HttpApi, HttpApiClient } from "effect/http-api"
import { type Bearer, withBearer } from "./Bearer.ts"

type OnFailure = "halt" | "propagate" | "absorb"
interface Placement {
  readonly key?: string
  readonly after?: ReadonlyArray<string>
  readonly on_failure?: OnFailure
}

/** The step verbs a member authors (runs supplement "Create and the step compiler"). */
export type RunStep =
  | {
      readonly tool: Placement & {
        readonly name: string
        readonly input?: Readonly<Record<string, unknown>>
        readonly route?: { readonly kind: "runner"; readonly runner_executor_public_id?: string }
        readonly timeout_ms?: number
      }
    }
  | {
      readonly model: Placement & {
        readonly prompt: string
        readonly model: {
          readonly model: string
          readonly reasoning_enabled?: boolean
          readonly reasoning_effort?: string
        }
        readonly tools?: ReadonlyArray<unknown>
        readonly instructions?: string
        readonly configuration?: Readonly<Record<string, unknown>>
        readonly attachments?: ReadonlyArray<unknown>
        readonly results?: ReadonlyArray<string>
        readonly retry?: number
      }
    }
  | {
      readonly ask: Placement & {
        readonly prompt: string
        readonly options?: ReadonlyArray<string>
        readonly multi?: boolean
        readonly timeout_ms?: number
      }
    }
  | {
      readonly wait: Placement & {
        readonly task: string
        readonly run_public_id?: string
        readonly timeout_ms?: number
      }
    }
  | {
      readonly parallel: ReadonlyArray<RunStep | ReadonlyArray<RunStep>>
      readonly until?: "all" | "any" | number
      readonly losers?: "cancel" | "run_out"
      readonly key?: string
    }

export type RunCreate = {
  readonly steps: ReadonlyArray<RunStep>
  readonly approval_mode: "bypass" | "ask" | "rules"
  readonly approval_rules?: ReadonlyArray<Readonly<Record<string, unknown>>>
  readonly prompt_mechanism?: "raw" | "default" | "assembly"
  readonly billing_subject?: string
  readonly default_runner_executor_public_id?: string
  readonly speaker_public_id?: string
  readonly model_selection?: unknown
  readonly fallback_models?: ReadonlyArray<string>
}

export type RunAppend = {
  readonly steps: ReadonlyArray<RunStep>
  readonly expected_revision?: number
  readonly resolve?: ReadonlyArray<Readonly<Record<string, unknown>>>
}

const RunsApi = HttpApi.make("runs").add(RunsGroup)

export interface RunsClientConfig {
  readonly baseUrl: string | URL
  /** The member credential (an agent's access token or a human's member token). */
  readonly bearer: Bearer
}

/** Whether an Idempotency-Keyed answer was the first acceptance given again. */
const replayed = (response: HttpClientResponse.HttpClientResponse) =>
  response.headers["idempotency-replayed"] === "true"

/** The run calls over the `HttpClient` in context, positional and with typed bodies. */
export const makeRunsClient = (config: RunsClientConfig) =>
  Effect.gen(function* () {
    const runs = yield* HttpApiClient.group(RunsApi, {
      group: "runs",
      httpClient: withBearer(yield* HttpClient.HttpClient, config.bearer),
      baseUrl: config.baseUrl
    })
    const at = (workspaceId: string, runId: string) => ({ workspace_id: workspaceId, run_id: runId })
    const atTask = (workspaceId: string, runId: string, key: string) => ({ ...at(workspaceId, runId), task_key: key })
    return {
      /** 201 `{run, receipt}`; `replayed` when the key's first acceptance was answered again. */
      create: (workspaceId: string, body: RunCreate, idempotencyKey: string) =>
        Effect.map(
          runs.create({
            params: { workspace_id: workspaceId },
            headers: { "idempotency-key": idempotencyKey },
            payload: { run: body },
            responseMode: "decoded-and-response"
          }),
          ([created, response]) => ({ ...created, replayed: replayed(response) })
        ),
      /** The trace `{run}`. */
      show: (workspaceId: string, runId: string) => runs.show({ params: at(workspaceId, runId) }),
      list: (
        workspaceId: string,
        filter: {
          readonly status?: ReadonlyArray<string>
          readonly attention?: "any"
          readonly order?: "asc" | "desc"
          readonly after?: string
          readonly limit?: number
        } = {}
      ) =>
        runs.list({
          params: { workspace_id: workspaceId },
          query: {
            ...(filter.status === undefined ? {} : { status: filter.status.join(",") }),
            ...(filter.attention === undefined ? {} : { attention: filter.attention }),
            ...(filter.order === undefined ? {} : { order: filter.order }),
            ...(filter.after === undefined ? {} : { after: filter.after }),
            ...(filter.limit === undefined ? {} : { limit: String(filter.limit) })
          }
        }),
      start: (workspaceId: string, runId: string) => runs.start({ params: at(workspaceId, runId), payload: {} }),
      pause: (workspaceId: string, runId: string, options: { readonly force?: boolean } = {}) =>
        runs.pause({ params: at(workspaceId, runId), payload: options }),
      resume: (workspaceId: string, runId: string) => runs.resume({ params: at(workspaceId, runId), payload: {} }),
      stop: (workspaceId: string, runId: string, options: { readonly force?: boolean } = {}) =>
        runs.stop({ params: at(workspaceId, runId), payload: options }),
      /** PUT default_runner: null clears; tasks accepted later are affected only. */
      setDefaultRunner: (workspaceId: string, runId: string, executorPublicId: string | null) =>
        runs.defaultRunner({
          params: at(workspaceId, runId),
          payload: { executor_public_id: executorPublicId }
        }),
      /** 201 `{receipt}`: the envelope appended (a new revision). */
      append: (workspaceId: string, runId: string, body: RunAppend, idempotencyKey: string) =>
        Effect.map(
          runs.append({
            params: at(workspaceId, runId),
            headers: { "idempotency-key": idempotencyKey },
            payload: body,
            responseMode: "decoded-and-response"
          }),
          ([appended, response]) => ({ ...appended, replayed: replayed(response) })
        ),
      /** `{task}`: the row with its inputs and result. */
      task: (workspaceId: string, runId: string, key: string) => runs.task({ params: atTask(workspaceId, runId, key) }),
      /** A sealed model round's request `{request: {entries, request_options}}`. */
      taskRequest: (workspaceId: string, runId: string, key: string) =>
        runs.taskRequest({ params: atTask(workspaceId, runId, key) }),
      resolve: (
        workspaceId: string,
        runId: string,
        key: string,
        body: {
          readonly resolution_token?: string
          readonly content?: unknown
          readonly outcome?: "completed" | "failed"
        }
      ) => runs.resolution({ params: atTask(workspaceId, runId, key), payload: body }),
      retry: (workspaceId: string, runId: string, key: string, body: { readonly model?: string } = {}) =>
        runs.retry({ params: atTask(workspaceId, runId, key), payload: body }),
      abandon: (workspaceId: string, runId: string, key: string) =>
        runs.abandon({ params: atTask(workspaceId, runId, key), payload: {} }),
      approve: (workspaceId: string, runId: string, key: string) =>
        runs.approve({ params: atTask(workspaceId, runId, key), payload: {} }),
      deny: (workspaceId: string, runId: string, key: string, body: { readonly reason?: string } = {}) =>
        runs.deny({ params: atTask(workspaceId, runId, key), payload: body }),
      cancelTask: (workspaceId: string, runId: string, key: string) =>
        runs.cancel({ params: atTask(workspaceId, runId, key), payload: {} }),
      compact: (workspaceId: string, runId: string, key: string) =>
        runs.compact({ params: atTask(workspaceId, runId, key), payload: {} }),
      graph: (workspaceId: string, runId: string) => runs.graph({ params: at(workspaceId, runId) }),
      phases: (workspaceId: string, runId: string) => runs.phases({ params: at(workspaceId, runId) }),
      transcript: (
        workspaceId: string,
        runId: string,
        page: { readonly before?: string; readonly limit?: number } = {}
      ) =>
        runs.transcript({
          params: at(workspaceId, runId),
          query: {
            ...(page.before === undefined ? {} : { before: page.before }),
            ...(page.limit === undefined ? {} : { limit: String(page.limit) })
          }
        }),
      /** 204: pending, completed or canceled runs only (409 run_live otherwise). */
      remove: (workspaceId: string, runId: string) => runs.remove({ params: at(workspaceId, runId) })
    } as const
  })

export type RunsClient = Effect.Success<ReturnType<typeof makeRunsClient>>
