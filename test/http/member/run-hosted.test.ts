// Conversation-hosted runs (spec "Engine selection"): an answerer whose configuration declares
// tools answers through a run hosted by the conversation; the model's tool call is served by the
// declared runner, the continuation's answer becomes the turn's run-backed variant, and the hosted
// run refuses its own door (conversation_hosted).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { waitForActorState, waitForMessages } from "../../support/actors.ts"
import { waitForConversation } from "../../support/conversations.ts"
import { bearer, request } from "../../support/http.ts"
import {
  inboxCalls,
  memberCalls,
  type RunWorld,
  readOnlyTool,
  runnerToolConfiguration,
  runWorld,
  waitForRun
} from "../../support/runs.ts"
import { startTestServer, type TestServer } from "../../support/server.ts"
import { waitForSteps } from "../../support/steps.ts"
import { about, openRaw } from "../cable/support-cable.ts"

let server: TestServer
let world: RunWorld & { readonly ownerToken: string }
let runner: { token: string; publicId: string }
let answerer: { public_id: string }
let conversation: string

const member = (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  request(server.baseUrl, method, `/agent_api/v1${path}`, {
    headers: { ...bearer(world.agent.token), ...headers },
    ...(body === undefined ? {} : { body })
  })

beforeAll(async () => {
  server = await startTestServer()
  world = await runWorld(server)
  runner = await world.runner("hosted-runner", [readOnlyTool("grep")])
  const named = await member("PUT", "/profile/agents/tooly", {
    scope: "instance",
    description: "Answers with a runner's grep",
    configuration: runnerToolConfiguration(runner.publicId, { name: "grep", description: "Search files" })
  })
  expect([201, 200]).toContain(named.status)
  answerer = named.body.agent
  const made = await member(
    "POST",
    `/workspaces/${world.workspaceId}/conversations`,
    { conversation: { title: "hosted" } },
    { "idempotency-key": "hosted-conversation" }
  )
  conversation = made.body.conversation.public_id
})
afterAll(() => server?.close())

describe("Engine selection: a run-backed reply", () => {
  it("a kernel ask the answerer imports parks for a person; its resolution lets the run answer", async () => {
    const asker = await member("PUT", "/profile/agents/asker", {
      scope: "instance",
      description: "Asks before answering",
      configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.human.ask"] }
    })
    expect([201, 200]).toContain(asker.status)
    // Its own conversation: the reply's prompt is the conversation's history and this input.
    const asking = (
      await member(
        "POST",
        `/workspaces/${world.workspaceId}/conversations`,
        { conversation: { title: "asking" } },
        { "idempotency-key": "asking-conversation" }
      )
    ).body.conversation.public_id
    const directive = JSON.stringify({ tool_calls: [{ name: "ask", input: { prompt: "Proceed?" } }] })
    const input = await member(
      "POST",
      `/workspaces/${world.workspaceId}/conversations/${asking}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: asker.body.agent.public_id } },
      { "idempotency-key": "hosted-ask" }
    )
    expect(input.status).toBe(202)
    const inputId = input.body.input.public_id
    let runId: string | null = null
    await waitForConversation(server, asking, async () => {
      runId =
        (
          await member(
            "GET",
            `/workspaces/${world.workspaceId}/conversations/${asking}/inputs/${inputId}/materialization`
          )
        ).body.materialization?.run_public_id ?? null
      return runId !== null
    })
    await waitForActorState(server, "run", runId!, "needs_attention")
    const runs = memberCalls(server, world)
    const held = (await runs.call("GET", `/${runId}`)).body.run
    expect(held.attention).toMatchObject({ reason: "awaiting_human", blocked_task_keys: ["s1-model-1-t0"] })
    const ask = (await runs.call("GET", `/${runId}/tasks/s1-model-1-t0`)).body.task
    expect(ask).toMatchObject({ kind: "await_task", status: "awaiting_input", prompt: "Proceed?" })
    const resolved = await runs.call("POST", `/${runId}/tasks/s1-model-1-t0/resolution`, { content: "yes" })
    expect(resolved.body.task.status).toBe("completed")
    await waitForActorState(server, "run", runId!, "completed")
    expect((await runs.call("GET", `/${runId}/tasks/s1-model-1-c`)).body.task.output).toBe("echo: yes")
    // The turn failed while its run waited for a person, and runs again to completion with it.
    const turnOf = async () =>
      (await member("GET", `/workspaces/${world.workspaceId}/conversations/${asking}/turns`)).body.turns.at(-1)
    let turn = await turnOf()
    await waitForConversation(server, asking, async () => {
      turn = await turnOf()
      return turn.status === "completed"
    })
    expect(turn).toMatchObject({ status: "completed" })
    const variants = (
      await member("GET", `/workspaces/${world.workspaceId}/conversations/${asking}/turns/${turn.public_id}/variants`)
    ).body.variants
    expect(variants[0]).toMatchObject({ source: "run", status: "completed", content: "echo: yes" })
  })

  it("a kernel memory call the answerer imports is carried out by the service; its answer reaches the continuation", async () => {
    const keeper = await member("PUT", "/profile/agents/keeper", {
      scope: "instance",
      description: "Keeps notes",
      configuration: { approval_mode: "bypass", default_model: "local/script", kernel_tools: ["svc.memory.write"] }
    })
    expect([201, 200]).toContain(keeper.status)
    const notes = (
      await member(
        "POST",
        `/workspaces/${world.workspaceId}/conversations`,
        { conversation: { title: "notes" } },
        { "idempotency-key": "notes-conversation" }
      )
    ).body.conversation.public_id
    const directive = JSON.stringify({
      tool_calls: [{ name: "memory_write", input: { path: "user/kept.md", content: "remember the milk" } }]
    })
    const input = await member(
      "POST",
      `/workspaces/${world.workspaceId}/conversations/${notes}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: keeper.body.agent.public_id } },
      { "idempotency-key": "notes-input" }
    )
    expect(input.status).toBe(202)
    let turn: any
    await waitForConversation(server, notes, async () => {
      turn = (await member("GET", `/workspaces/${world.workspaceId}/conversations/${notes}/turns`)).body.turns.at(-1)
      return turn?.status === "completed"
    })
    const variants = (
      await member("GET", `/workspaces/${world.workspaceId}/conversations/${notes}/turns/${turn.public_id}/variants`)
    ).body.variants
    expect(variants[0]).toMatchObject({ source: "run", content: "echo: wrote user/kept.md" })
    // The note is in the memory of the human the agents serve.
    const shown = await member("POST", "/profile/memory/show", { memory: { path: "user/kept.md" } })
    expect(shown.body.memory).toMatchObject({ path: "user/kept.md", content: "remember the milk" })
  })

  it("a skill load reads a skills/ row in reach (else skill_unknown); a tool search finds declared tools and skills", async () => {
    const written = await member("POST", "/profile/memory", {
      memory: {
        path: "user/skills/greet",
        content: "Say hello first",
        description: "Greeting",
        expected_public_id: null,
        expected_lock_version: null
      }
    })
    expect(written.status).toBeLessThan(300)
    const skilled = await member("PUT", "/profile/agents/skilled", {
      scope: "instance",
      description: "Loads skills",
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: ["svc.skill.load", "svc.tools.search"],
        tool_definitions: [
          {
            type: "function",
            function: { name: "wave", description: "Waves a greeting", parameters: { type: "object" } }
          }
        ]
      }
    })
    const skills = (
      await member(
        "POST",
        `/workspaces/${world.workspaceId}/conversations`,
        { conversation: { title: "skills" } },
        { "idempotency-key": "skills-conversation" }
      )
    ).body.conversation.public_id
    const directive = JSON.stringify({
      tool_calls: [
        { name: "skill", input: { name: "nope" } },
        { name: "skill", input: { name: "greet" } },
        { name: "tool_search", input: { query: "greeting" } }
      ]
    })
    const input = await member(
      "POST",
      `/workspaces/${world.workspaceId}/conversations/${skills}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: skilled.body.agent.public_id } },
      { "idempotency-key": "skills-input" }
    )
    const inputId = input.body.input.public_id
    let runId: string | null = null
    let turn: any
    await waitForConversation(server, skills, async () => {
      runId =
        (
          await member(
            "GET",
            `/workspaces/${world.workspaceId}/conversations/${skills}/inputs/${inputId}/materialization`
          )
        ).body.materialization?.run_public_id ?? null
      turn = (await member("GET", `/workspaces/${world.workspaceId}/conversations/${skills}/turns`)).body.turns.at(-1)
      return runId !== null && turn?.status === "completed"
    })
    const runs = memberCalls(server, world)
    const unknown = (await runs.call("GET", `/${runId}/tasks/s1-model-1-t0`)).body.task
    expect(unknown).toMatchObject({ status: "failed", error: { key: "skill_unknown" } })
    const loaded = (await runs.call("GET", `/${runId}/tasks/s1-model-1-t1`)).body.task
    expect(loaded).toMatchObject({ status: "completed", output: "Say hello first" })
    const searched = (await runs.call("GET", `/${runId}/tasks/s1-model-1-t2`)).body.task
    expect(JSON.parse(searched.output)).toEqual({
      tools: [{ name: "wave", description: "Waves a greeting", input_schema: { type: "object" } }],
      skills: [{ name: "greet", description: "Greeting" }]
    })
  })

  it("a run hosted by a spawned child: inbox rows name the child and its parent, the trace the child's turn", async () => {
    const nester = await member("PUT", "/profile/agents/nester", {
      scope: "instance",
      description: "Spawns a child that greps",
      configuration: {
        approval_mode: "bypass",
        default_model: "local/script",
        kernel_tools: ["svc.conversation.spawn"],
        tool_definitions: [
          {
            type: "function",
            function: { name: "grep", description: "Search files", parameters: { type: "object" } },
            runner_executor_public_id: runner.publicId
          }
        ]
      }
    })
    expect([201, 200]).toContain(nester.status)
    // The owner's workspace: the agent's own is dedicated to it, fencing the named agent's spawn.
    const workspace = (
      await request(server.baseUrl, "POST", "/agent_api/v1/workspaces", {
        headers: { ...bearer(world.ownerToken), "idempotency-key": "nesting-workspace" },
        body: { workspace: { name: "nesting" } }
      })
    ).body.workspace.public_id
    const parent = (
      await member(
        "POST",
        `/workspaces/${workspace}/conversations`,
        { conversation: { title: "nesting" } },
        { "idempotency-key": "nesting-conversation" }
      )
    ).body.conversation.public_id
    const grep = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "deep" } }] })
    const directive = JSON.stringify({ tool_calls: [{ name: "spawn", input: { prompt: grep, label: "digger" } }] })
    const input = await member(
      "POST",
      `/workspaces/${workspace}/conversations/${parent}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: nester.body.agent.public_id } },
      { "idempotency-key": "nesting-input" }
    )
    expect(input.status).toBe(202)
    const inbox = inboxCalls(server, runner.token)
    let row: any
    await waitForSteps(server, async () => {
      row = (await inbox.list()).body.tasks.find((each: any) => each.tool_input?.pattern === "deep")
      return row !== undefined
    })
    const children = (await member("GET", `/workspaces/${workspace}/conversations/${parent}/children`)).body
      .conversations
    expect(children).toHaveLength(1)
    expect(row).toMatchObject({
      kind: "tool_call",
      tool_name: "grep",
      conversation_public_id: children[0].public_id,
      parent_public_id: parent
    })
    // The hosted run's trace names its turn as the child shows it: the answerer and the variant's model.
    const runs = memberCalls(server, { ...world, workspaceId: workspace })
    const trace = (await runs.call("GET", `/${row.run_public_id}`)).body.run
    expect(trace.turn).toEqual({
      status: "running",
      public_id: expect.any(String),
      conversation_public_id: children[0].public_id,
      answering_user_public_id: nester.body.agent.public_id,
      model: { provider_id: "local", model_ref: "local/script", reasoning_enabled: false, reasoning_effort: "medium" }
    })
    const claimed = await inbox.claim(row.run_public_id, row.task_key)
    expect(claimed.body.task).toMatchObject({ conversation_public_id: children[0].public_id, parent_public_id: parent })
    await inbox.commit(row.run_public_id, row.task_key, {
      claim_token: claimed.body.claim.claim_token,
      content: "1 hit"
    })
    await waitForActorState(server, "run", row.run_public_id, "completed")
  })

  it("the answerer's declared tool is served by its runner and the continuation's answer is the turn's variant", async () => {
    // The conversation's progress feed carries its hosted run's frames.
    const cable = openRaw(server, { headers: bearer(world.agent.token) })
    expect(await cable.frames.take()).toEqual({ type: "welcome" })
    const identifier = JSON.stringify({
      channel: "ConversationChannel",
      workspace_id: world.workspaceId,
      conversation_id: conversation,
      items: "progress"
    })
    cable.subscribe(identifier)
    expect((await cable.frames.take(about(identifier))).type).toBe("confirm_subscription")
    const directive = JSON.stringify({ tool_calls: [{ name: "grep", input: { pattern: "z" } }] })
    const input = await member(
      "POST",
      `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs`,
      { input: { kind: "direct_reply", text: directive, answering_user_public_id: answerer.public_id } },
      { "idempotency-key": "hosted-input" }
    )
    expect(input.status).toBe(202)
    const inputId = input.body.input.public_id
    let materialization: any
    await waitForConversation(server, conversation, async () => {
      materialization = (
        await member(
          "GET",
          `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs/${inputId}/materialization`
        )
      ).body.materialization
      return Boolean(materialization?.run_public_id)
    })
    const runId = materialization.run_public_id as string
    expect(runId).toEqual(expect.any(String))
    const inbox = inboxCalls(server, runner.token)
    let row: any
    await waitForRun(server, runId, async () => {
      row = (await inbox.list()).body.tasks.find((each: any) => each.run_public_id === runId)
      return row !== undefined
    })
    expect(row).toMatchObject({ tool_name: "grep", tool_input: { pattern: "z" }, conversation_public_id: conversation })
    const started = await cable.frames.take(
      (frame: any) => about(identifier)(frame) && frame.message?.frame?.type === "step_started"
    )
    expect(started.message.frame).toMatchObject({ run_public_id: runId, task_key: row.task_key, tool_name: "grep" })
    // The round that made the call was announced on the same feed, its size the task read's.
    const round = await cable.frames.take(
      (frame: any) => about(identifier)(frame) && frame.message?.frame?.type === "round_started"
    )
    expect(round.message.frame).toMatchObject({ run_public_id: runId, mainline: true, attempt: 1 })
    const roundTask = await member(
      "GET",
      `/workspaces/${world.workspaceId}/runs/${runId}/tasks/${round.message.frame.task_key}`
    )
    expect(roundTask.body.task.request_bytes).toBe(round.message.frame.request_bytes)
    // A steer may name the running reply's run as its guard; another run is a changed target.
    const steerWith = (guard: string, key: string) =>
      member(
        "POST",
        `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs`,
        {
          input: {
            kind: "message",
            text: "also check tests",
            delivery_mode: "steer",
            expected_steering_run_public_id: guard
          }
        },
        { "idempotency-key": key }
      )
    const changed = await steerWith("01900000-0000-7000-8000-000000000000", "steer-other")
    expect([changed.status, changed.body.error.code]).toEqual([409, "steering_target_changed"])
    const steer = await steerWith(runId, "steer-guarded")
    expect(steer.status).toBe(202)
    expect(steer.body.input.state).toBe("steering")
    // The steer reaches the run as a message after the conversation's step: the result waits for it,
    // or the next round could start before the run holds it.
    await waitForMessages(server, "run", runId)
    const claimed = await inbox.claim(runId, row.task_key)
    await inbox.commit(runId, row.task_key, { claim_token: claimed.body.claim.claim_token, content: "7 hits" })
    await waitForActorState(server, "run", runId, "completed")

    let turn: any
    await waitForConversation(server, conversation, async () => {
      const turns = (await member("GET", `/workspaces/${world.workspaceId}/conversations/${conversation}/turns`)).body
        .turns
      turn = turns.find((each: any) => each.public_id === materialization.turn_public_id)
      return turn?.status === "completed"
    })
    expect(turn.status).toBe("completed")
    const variants = (
      await member(
        "GET",
        `/workspaces/${world.workspaceId}/conversations/${conversation}/turns/${turn.public_id}/variants`
      )
    ).body.variants
    // The held steer landed in the run's next round (after the call's result) and is consumed into
    // the reply's turn; the model (local/script) echoes the last message it read.
    expect(variants[0]).toMatchObject({
      source: "run",
      status: "completed",
      run_public_id: runId,
      content: "echo: also check tests"
    })
    const steered = (
      await member(
        "GET",
        `/workspaces/${world.workspaceId}/conversations/${conversation}/inputs/${steer.body.input.public_id}/materialization`
      )
    ).body.materialization
    expect(steered).toMatchObject({ turn_public_id: turn.public_id, run_public_id: runId })

    cable.socket.close()
    const runs = memberCalls(server, world)
    const continuation = `${row.task_key.replace(/-t0$/, "")}-c`
    const sealed = (await runs.call("GET", `/${runId}/tasks/${continuation}/request`)).body.request
    expect(sealed.entries.at(-1)).toEqual({ role: "user", parts: [{ type: "text", text: "also check tests" }] })
    const hostedDelete = await runs.call("DELETE", `/${runId}`)
    expect(hostedDelete.status).toBe(409)
    expect(hostedDelete.body.error).toMatchObject({
      code: "conversation_hosted",
      conversation_public_id: conversation,
      turn_public_id: turn.public_id
    })
    // Its default_runner door and its feed are its conversation's too.
    const hostedRunner = await runs.call("PUT", `/${runId}/default_runner`, {
      default_runner: { executor_public_id: null }
    })
    const hostedFeed = await runs.call("GET", `/${runId}/events`)
    for (const refused of [hostedRunner, hostedFeed]) {
      expect([refused.status, refused.body.error]).toEqual([409, hostedDelete.body.error])
    }
  })
})
