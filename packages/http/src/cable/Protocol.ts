// The Action Cable JSON wire protocol (subprotocol `actioncable-v1-json`), as the stock
// `@rails/actioncable` client speaks it: what the server sends, how client commands are read,
// and which subprotocol a handshake settles on. Nothing here knows a channel.

/** The subprotocols the server speaks, in the order Rails lists them. */
export const supportedProtocol = "actioncable-v1-json"
/** Rails accepts it too: a client that gets it back knows the server is too new and stops. */
export const unsupportedProtocol = "actioncable-unsupported"
const acceptedProtocols: ReadonlySet<string> = new Set([supportedProtocol, unsupportedProtocol])

/** Reasons Rails uses in `disconnect` (plus ours for a failed subscription stream). */
export type DisconnectReason = "unauthorized" | "invalid_request" | "server_restart" | "remote" | "server_error"

export type ServerFrame =
  | { readonly type: "welcome" }
  | { readonly type: "ping"; readonly message: number }
  | { readonly type: "disconnect"; readonly reason: DisconnectReason; readonly reconnect: boolean }
  | { readonly type: "confirm_subscription"; readonly identifier: string }
  | { readonly type: "reject_subscription"; readonly identifier: string }
  | { readonly identifier: string; readonly message: unknown }

export const welcome: ServerFrame = { type: "welcome" }
export const ping = (unixSeconds: number): ServerFrame => ({ type: "ping", message: unixSeconds })
export const disconnect = (reason: DisconnectReason, reconnect: boolean): ServerFrame => ({
  type: "disconnect",
  reason,
  reconnect
})
export const confirm = (identifier: string): ServerFrame => ({ type: "confirm_subscription", identifier })
export const reject = (identifier: string): ServerFrame => ({ type: "reject_subscription", identifier })
export const broadcast = (identifier: string, message: unknown): ServerFrame => ({ identifier, message })

/** A message already in JSON text: one made once for many subscriptions (a feed's shared item). */
export class EncodedMessage {
  readonly json: string
  constructor(json: string) {
    this.json = json
  }
}

/** The text of `broadcast(identifier, message)`, splicing an encoded message in as it is. */
export const broadcastText = (identifier: string, message: unknown): string =>
  message instanceof EncodedMessage
    ? `{"identifier":${JSON.stringify(identifier)},"message":${message.json}}`
    : JSON.stringify(broadcast(identifier, message))

/**
 * A client command. `identifier` is kept as the exact string the client sent: it is the key of
 * the subscription and is echoed verbatim (Rails does the same), so key order and spacing
 * survive. `params` is the parsed identifier; `data` the parsed `data` of a `message` command.
 */
export type ClientCommand =
  | {
      readonly command: "subscribe"
      readonly identifier: string
      readonly channel: string | undefined
      readonly params: Readonly<Record<string, unknown>> | undefined
    }
  | { readonly command: "unsubscribe"; readonly identifier: string }
  | {
      readonly command: "message"
      readonly identifier: string
      readonly data: Readonly<Record<string, unknown>> | undefined
    }

const parseObject = (text: string): Record<string, unknown> | undefined => {
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : undefined
  } catch {
    return undefined
  }
}

/**
 * Reads one text frame. Answers undefined for anything that is not a command this server
 * knows (bad JSON, not an object, an unknown command, an identifier that is not a string):
 * the connection ignores such frames and stays open.
 */
export const parseCommand = (frame: string): ClientCommand | undefined => {
  const value = parseObject(frame)
  if (value === undefined || typeof value.identifier !== "string") return undefined
  const identifier = value.identifier
  switch (value.command) {
    case "subscribe": {
      const params = parseObject(identifier)
      const channel = typeof params?.channel === "string" ? params.channel : undefined
      return { command: "subscribe", identifier, channel, params }
    }
    case "unsubscribe":
      return { command: "unsubscribe", identifier }
    case "message":
      return {
        command: "message",
        identifier,
        data: typeof value.data === "string" ? parseObject(value.data) : undefined
      }
    default:
      return undefined
  }
}

/** The offered subprotocols of a handshake (`Sec-WebSocket-Protocol`, comma-separated). */
export const offeredProtocols = (header: string | undefined): ReadonlyArray<string> =>
  header === undefined
    ? []
    : header
        .split(",")
        .map((protocol) => protocol.trim())
        .filter((protocol) => protocol.length > 0)

/**
 * The subprotocol the server answers with, like Rails (websocket-driver): the first offered
 * one it speaks, in the client's order; none when nothing offered is spoken (the handshake
 * then carries no subprotocol and a strict client gives up on its own).
 */
export const negotiateProtocol = (offered: ReadonlyArray<string>): string | undefined =>
  offered.find((protocol) => acceptedProtocols.has(protocol))
