// Helpers for the cable tests: an inbox that waits for frames (never sleeps), a raw WebSocket speaking JSON frames, and the
// stock `@rails/actioncable` consumer authenticating with custom handshake headers.
import { adapters, type Consumer, createConsumer, type SubscriptionCallbacks } from "@rails/actioncable"
import { cablePath } from "@troupe/http/cable/Cable"
import { Browser, csrfTokenIn, request } from "../../support/http.ts"
import type { TestServer } from "../../support/server.ts"

export const cableUrl = (server: Pick<TestServer, "baseUrl">) => `${server.baseUrl.replace(/^http/, "ws")}${cablePath}`

export const actionCableProtocols = ["actioncable-v1-json", "actioncable-unsupported"]

// The stock client's connection monitor listens for page visibility on the global object,
// which Node does not have.
const globals = globalThis as unknown as Record<string, unknown>
globals.addEventListener ??= () => {}
globals.removeEventListener ??= () => {}

type Predicate = (item: any) => boolean

/** Items in arrival order; `take` answers (and removes) the first one matching, waiting if needed. */
export class Inbox {
  private readonly items: Array<any> = []
  private readonly waiters: Array<{ readonly matches: Predicate; readonly resolve: (item: any) => void }> = []

  push(item: unknown) {
    const index = this.waiters.findIndex((waiter) => waiter.matches(item))
    if (index >= 0) this.waiters.splice(index, 1)[0]!.resolve(item)
    else this.items.push(item)
  }

  take(matches: Predicate = () => true): Promise<any> {
    const index = this.items.findIndex(matches)
    if (index >= 0) return Promise.resolve(this.items.splice(index, 1)[0])
    return new Promise((resolve) => this.waiters.push({ matches, resolve }))
  }

  /** What is buffered now (without waiting), matching. */
  buffered(matches: Predicate = () => true) {
    return this.items.filter(matches)
  }
}

export const isType = (type: string) => (frame: any) => frame?.type === type
export const about = (identifier: string) => (frame: any) => frame?.identifier === identifier

export interface RawCable {
  readonly socket: WebSocket
  readonly frames: Inbox
  readonly opened: Promise<void>
  readonly closed: Promise<{ readonly code: number; readonly reason: string }>
  readonly send: (frame: unknown) => void
  readonly subscribe: (identifier: string) => void
  readonly unsubscribe: (identifier: string) => void
}

/** A plain WebSocket to the cable; every text frame is parsed into `frames`. */
export const openRaw = (
  server: Pick<TestServer, "baseUrl">,
  options: { readonly headers?: Record<string, string>; readonly protocols?: Array<string> } = {}
): RawCable => {
  const socket = new WebSocket(cableUrl(server), {
    protocols: options.protocols ?? actionCableProtocols,
    headers: options.headers ?? {}
  })
  const frames = new Inbox()
  socket.addEventListener("message", (event) => frames.push(JSON.parse(String(event.data))))
  const opened = new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true })
    socket.addEventListener("error", () => reject(new Error("the handshake failed")), { once: true })
  })
  // Not every test awaits the handshake; a failed one must not count as unhandled.
  opened.catch(() => {})
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    socket.addEventListener("close", (event) => resolve({ code: event.code, reason: event.reason }), { once: true })
  )
  const send = (frame: unknown) => socket.send(typeof frame === "string" ? frame : JSON.stringify(frame))
  return {
    socket,
    frames,
    opened,
    closed,
    send,
    subscribe: (identifier) => send({ command: "subscribe", identifier }),
    unsubscribe: (identifier) => send({ command: "unsubscribe", identifier })
  }
}

/**
 * The stock consumer, unchanged: only its WebSocket adapter is a subclass of Node's WebSocket
 * that adds handshake headers (what a browser does with its cookie) and lets the test see the
 * raw frames too.
 */
export const stockConsumer = (server: TestServer, headers: Record<string, string>) => {
  const frames = new Inbox()
  class HeaderWebSocket extends WebSocket {
    constructor(url: string | URL, protocols?: string | Array<string>) {
      super(url, { protocols: protocols ?? [], headers })
      this.addEventListener("message", (event) => frames.push(JSON.parse(String(event.data))))
    }
  }
  adapters.WebSocket = HeaderWebSocket
  const consumer: Consumer = createConsumer(cableUrl(server))
  return { consumer, frames }
}

/** A stock subscription whose callbacks land in an inbox as {event, ...}. */
export const stockSubscription = (consumer: Consumer, params: Record<string, unknown>) => {
  const events = new Inbox()
  const callbacks: SubscriptionCallbacks = {
    connected: (details) => events.push({ event: "connected", ...details }),
    disconnected: (details) => events.push({ event: "disconnected", ...details }),
    rejected: () => events.push({ event: "rejected" }),
    received: (data) => events.push({ event: "received", data })
  }
  const subscription = consumer.subscriptions.create(params, callbacks)
  return { subscription, events }
}

export const isEvent = (event: string) => (item: any) => item?.event === event

let nextAddress = 1
/** Each sign-in comes from its own source address, so the per-IP login budget never bites. */
export const fromNewAddress = () => ({ "x-forwarded-for": `203.0.113.${nextAddress++}` })

/** Signs in over the API: the bearer token and the session's public id (its actor id). */
export const signIn = async (server: TestServer, credentials: { email: string; password: string }) => {
  const response = await request(server.baseUrl, "POST", "/api/v1/session", {
    body: credentials,
    headers: fromNewAddress()
  })
  if (response.status !== 201) throw new Error(`sign-in failed: ${response.status}`)
  return { token: response.body.token as string, actorId: response.body.session.public_id as string }
}

/** Signs in through the login page: the browser's Cookie header. */
export const browserCookie = async (server: TestServer, credentials: { email: string; password: string }) => {
  const browser = new Browser(server.baseUrl)
  const address = fromNewAddress()
  const form = await browser.get("/login", address)
  await browser.post("/login", { ...credentials, csrf_token: csrfTokenIn(form.text) }, address)
  return browser.cookieHeader
}
