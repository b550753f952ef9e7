// The parts of the stock `@rails/actioncable` client the cable tests use (the package ships no
// types).
declare module "@rails/actioncable" {
  export interface SubscriptionCallbacks {
    connected?(details: { reconnected: boolean }): void
    disconnected?(details: { willAttemptReconnect: boolean }): void
    rejected?(): void
    received?(data: any): void
  }
  export interface Subscription {
    readonly identifier: string
    perform(action: string, data?: Record<string, unknown>): boolean
    unsubscribe(): void
  }
  export interface Subscriptions {
    create(params: string | Record<string, unknown>, callbacks?: SubscriptionCallbacks): Subscription
  }
  export interface Connection {
    isOpen(): boolean
    getProtocol(): string | undefined
    readonly monitor: { isRunning(): boolean }
  }
  export interface Consumer {
    readonly subscriptions: Subscriptions
    readonly connection: Connection
    connect(): boolean
    disconnect(): void
  }
  export function createConsumer(url: string): Consumer
  export const adapters: { WebSocket: unknown; logger: { log(...messages: Array<unknown>): void } }
  export const logger: { enabled: boolean }
}
