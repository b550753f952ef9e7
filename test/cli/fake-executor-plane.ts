// A stand-in for the executor plane's wire (contracts/executor/Inbox.ts, Executor.ts, the
// ExecutorInboxChannel, the refresh grant), so the runner's loop is exercised before the server
// serves runs: rows the test lists, claims, extensions and commits it records, a cable it drives.
import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { type WebSocket, WebSocketServer } from "ws"
import { Inbox } from "../http/cable/support-cable.ts"

export interface FakeRow {
  readonly kind: string
  readonly run_public_id: string
  readonly task_key: string
  readonly tool_name?: string
  readonly tool_input?: Record<string, unknown>
  readonly timeout_ms: number
  claimed: boolean
  readonly started_at: string
}

export interface Recorded {
  readonly what: "claim" | "extend" | "commit" | "announce" | "pong" | "refresh"
  readonly key?: string
  readonly body?: any
}

const identifier = JSON.stringify({ channel: "ExecutorInboxChannel" })
const executorId = "01900000-0000-7000-8000-0000000000aa"

const executor = (served: unknown) => ({
  executor: {
    public_id: executorId,
    kind: "runner",
    status: "active",
    display_name: "Fake runner",
    credential_epoch: 1,
    served_tools: served,
    environment: null,
    served_documents: [],
    presence: "online",
    last_seen_at: null,
    connected_at: null
  },
  measured_at: new Date().toISOString()
})

const taskRow = (row: FakeRow, status: string) => ({
  key: row.task_key,
  kind: "tool_task",
  lifetime: "conversation",
  wake: "auto",
  status,
  visibility: "visible",
  after: [],
  on_failure: "propagate",
  tool_name: row.tool_name,
  created_at: new Date().toISOString(),
  started_at: new Date().toISOString(),
  completed_at: new Date().toISOString()
})

const readBody = (request: IncomingMessage) =>
  new Promise<any>((done) => {
    let text = ""
    request.on("data", (chunk) => {
      text += chunk
    })
    request.on("end", () =>
      done(
        text === ""
          ? undefined
          : request.headers["content-type"]?.startsWith("application/x-www-form-urlencoded")
            ? Object.fromEntries(new URLSearchParams(text))
            : JSON.parse(text)
      )
    )
  })

export const startFakePlane = async () => {
  const rows: Array<FakeRow> = []
  const claims = new Map<string, { token: string; deadline: number }>()
  const events = new Inbox()
  const tokens = { access: "access-1", refresh: "refresh-1" }
  const sockets = new Set<WebSocket>()
  let served: unknown = []
  let refuseNextCommit = false

  const listed = (row: FakeRow) => ({
    kind: row.kind,
    run_public_id: row.run_public_id,
    workspace_public_id: "01900000-0000-7000-8000-0000000000bb",
    conversation_public_id: null,
    parent_public_id: null,
    task_key: row.task_key,
    started_at: row.started_at,
    deadline_at: new Date(Date.parse(row.started_at) + row.timeout_ms).toISOString(),
    timeout_ms: row.timeout_ms,
    claimed: row.claimed,
    addressed_to: { role: "runner", executor_public_id: executorId },
    ...(row.tool_name === undefined ? {} : { tool_name: row.tool_name, tool_call_id: row.task_key }),
    ...(row.tool_input === undefined ? {} : { tool_input: row.tool_input })
  })

  const answer = (response: ServerResponse, status: number, body?: unknown) => {
    response.writeHead(status, { "content-type": "application/json" })
    response.end(body === undefined ? undefined : JSON.stringify(body))
  }
  const refuse = (response: ServerResponse, status: number, code: string) =>
    answer(response, status, { error: { code, message: code } })

  const http = createServer(async (request, response) => {
    const url = new URL(request.url ?? "/", "http://fake")
    const body = await readBody(request)
    if (url.pathname === "/oauth/token" && body?.grant_type === "refresh_token") {
      if (body.refresh_token !== tokens.refresh) return answer(response, 400, { error: "invalid_grant" })
      const serial = Number(tokens.access.split("-")[1]) + 1
      tokens.access = `access-${serial}`
      tokens.refresh = `refresh-${serial}`
      events.push({ what: "refresh" })
      return answer(response, 200, {
        access_token: tokens.access,
        token_type: "Bearer",
        expires_in: 1209600,
        refresh_token: tokens.refresh,
        plane: "executor_transport"
      })
    }
    if (request.headers.authorization !== `Bearer ${tokens.access}`) return refuse(response, 401, "unauthorized")
    if (url.pathname === "/agent_api/v1/executor") return answer(response, 200, executor(served))
    if (url.pathname === "/agent_api/v1/executor/announcement") {
      served = body.tools
      events.push({ what: "announce", body })
      return answer(response, 200, executor(served))
    }
    if (url.pathname === "/agent_api/v1/executor/inbox") {
      return answer(response, 200, { tasks: rows.map(listed), pagination: { next_after: null } })
    }
    const match = url.pathname.match(/^\/agent_api\/v1\/executor\/inbox\/([^/]+)\/([^/]+)\/(claim|extend|commit)$/)
    const row = match && rows.find((row) => row.run_public_id === match[1] && row.task_key === match[2])
    if (!match || !row) return refuse(response, 404, "not_found")
    const key = `${row.run_public_id}/${row.task_key}`
    const verb = match[3] as "claim" | "extend" | "commit"
    events.push({ what: verb, key, body })
    if (verb === "claim") {
      if (row.claimed) return refuse(response, 409, "already_claimed")
      row.claimed = true
      const claim = { token: randomUUID(), deadline: Date.now() + row.timeout_ms }
      claims.set(key, claim)
      return answer(response, 200, {
        task: listed(row),
        claim: { claim_token: claim.token, deadline_at: new Date(claim.deadline).toISOString() }
      })
    }
    const claim = claims.get(key)
    if (claim === undefined || claim.token !== body?.claim_token) return refuse(response, 409, "not_claimant")
    if (verb === "extend") {
      claim.deadline = Date.now() + body.timeout_ms
      return answer(response, 200, {
        task: listed(row),
        claim: { claim_token: claim.token, deadline_at: new Date(claim.deadline).toISOString() }
      })
    }
    if (refuseNextCommit) {
      refuseNextCommit = false
      return refuse(response, 422, "invalid_title")
    }
    rows.splice(rows.indexOf(row), 1)
    return answer(response, 200, { task: taskRow(row, body.outcome === "failed" ? "failed" : "completed") })
  })

  const cable = new WebSocketServer({ noServer: true, handleProtocols: () => "actioncable-v1-json" })
  http.on("upgrade", (request, socket, head) => {
    if (request.headers.authorization !== `Bearer ${tokens.access}`) {
      socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n")
      return
    }
    cable.handleUpgrade(request, socket, head, (ws) => {
      sockets.add(ws)
      ws.on("close", () => sockets.delete(ws))
      ws.send(JSON.stringify({ type: "welcome" }))
      const pings = setInterval(() => ws.send(JSON.stringify({ type: "ping", message: Date.now() })), 1000)
      ws.on("close", () => clearInterval(pings))
      ws.on("message", (data) => {
        const command = JSON.parse(String(data))
        if (command.command === "subscribe" && command.identifier === identifier) {
          ws.send(JSON.stringify({ type: "confirm_subscription", identifier }))
        } else if (command.command === "message" && JSON.parse(command.data).action === "pong") {
          events.push({ what: "pong" })
        }
      })
    })
  })

  await new Promise<void>((done) => http.listen(0, "127.0.0.1", done))
  const port = (http.address() as AddressInfo).port
  const baseUrl = `http://127.0.0.1:${port}`

  /** Sends a channel message to every subscribed socket. */
  const broadcast = (message: unknown) => {
    for (const ws of sockets) ws.send(JSON.stringify({ identifier, message }))
  }

  return {
    baseUrl,
    events,
    tokens,
    /** Lists a row; with `announce`, says work_available on the cable. */
    add: (row: Omit<FakeRow, "claimed" | "started_at">, announce = true) => {
      rows.push({ ...row, claimed: false, started_at: new Date().toISOString() })
      if (announce) {
        broadcast({ type: "work_available", kind: row.kind, run_public_id: row.run_public_id, task_key: row.task_key })
      }
    },
    broadcast,
    /** Closes every cable socket (the runner should poll, then reconnect). */
    dropSockets: () => {
      for (const ws of sockets) ws.terminate()
    },
    refuseNextCommit: () => {
      refuseNextCommit = true
    },
    /** Makes the current access token stale (the next call is 401; the refresh token still works). */
    expireAccessToken: () => {
      tokens.access = `${tokens.access.split("-")[0]}-${Number(tokens.access.split("-")[1]) + 100}`
    },
    /** Stops listening and drops every connection (a runner's connections are refused). */
    goDown: () =>
      new Promise<void>((done) => {
        for (const ws of sockets) ws.terminate()
        http.close(() => done())
        http.closeAllConnections()
      }),
    /** Listens again at the same address. */
    comeBack: () => new Promise<void>((done) => http.listen(port, "127.0.0.1", done)),
    close: () =>
      new Promise<void>((done) => {
        for (const ws of sockets) ws.terminate()
        cable.close()
        http.close(() => done())
        http.closeAllConnections()
      })
  }
}

export type FakePlane = Awaited<ReturnType<typeof startFakePlane>>
