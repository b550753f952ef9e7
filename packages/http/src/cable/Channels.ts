// The cable's channel registry. A channel is a name plus `subscribe(params, connection)`, which
// either rejects or answers the stream of messages for that subscription. Channels register
// themselves with a layer (`registerChannel`), so new channels never touch the protocol code.
import type { MemberCaller } from "@troupe/contracts/member/Caller"
import type { PlatformCaller } from "@troupe/contracts/platform/Caller"
import { Context, Data, Effect, Layer, type Scope, Stream } from "effect"
import type { DisconnectReason } from "./Protocol.ts"

/** The one answer to a subscription that is unauthorized, unknown or malformed: like absence. */
export class SubscriptionRejected extends Data.TaggedError("SubscriptionRejected")<{}> {}

export const rejected = Effect.fail(new SubscriptionRejected())

/**
 * Who a socket authenticated as: a human (API session bearer or browser cookie), a member (an
 * agent's access token, or a human's member-plane token), or an executor (its transport
 * credential). Fixed for the socket's life: a change disconnects.
 */
export type CableIdentity =
  | { readonly _tag: "Human"; readonly caller: PlatformCaller }
  | {
      readonly _tag: "Member"
      readonly caller: MemberCaller
      /** The address whose epoch fences the credential (an agent application's), if any. */
      readonly addressPublicId: string | undefined
    }
  | {
      readonly _tag: "Executor"
      readonly executor: { readonly id: bigint; readonly publicId: string; readonly kind: string }
      readonly credentialPublicId: string
    }

/**
 * The actor whose steps may change the identity's authority (its session, its address); none for
 * a member credential no address fences, which only the periodic recheck judges again.
 */
export const authorityActor = (identity: CableIdentity): { readonly kind: string; readonly id: string } | undefined => {
  switch (identity._tag) {
    case "Human":
      return { kind: "apiSession", id: identity.caller.credential.publicId }
    case "Member":
      return identity.addressPublicId === undefined
        ? undefined
        : { kind: "executorAddress", id: identity.addressPublicId }
    case "Executor":
      return { kind: "executorAddress", id: identity.executor.publicId }
  }
}

/** Same identity, same authority: otherwise subscriptions must be authorized again. */
export const sameAuthority = (a: CableIdentity, b: CableIdentity) => {
  if (a._tag === "Human" && b._tag === "Human") {
    return a.caller.user.id === b.caller.user.id && a.caller.user.role === b.caller.user.role
  }
  if (a._tag === "Member" && b._tag === "Member") {
    // An agent's access is its steward's: a new steward or a changed role is new authority.
    return (
      a.caller.credential.publicId === b.caller.credential.publicId &&
      a.caller.human.id === b.caller.human.id &&
      a.caller.human.role === b.caller.human.role
    )
  }
  return a._tag === "Executor" && b._tag === "Executor" && a.credentialPublicId === b.credentialPublicId
}

/** One open socket, as channels see it. */
export interface CableConnection {
  readonly identity: CableIdentity
  /** Sends `disconnect {reason, reconnect}` and closes the socket. */
  readonly disconnect: (reason: DisconnectReason, reconnect: boolean) => Effect.Effect<void>
}

/** What an accepted subscription produces. */
export interface ChannelSubscription {
  /** Each element goes to the client as `{identifier, message}`, in order (an EncodedMessage as its text). */
  readonly messages: Stream.Stream<unknown>
  /** Handles a client `message` command (its parsed `data`, which names an `action`). */
  readonly perform?: ((data: Readonly<Record<string, unknown>>) => Effect.Effect<void>) | undefined
  /**
   * Judges again whether the subscriber may still follow what it subscribed to: at each recheck of
   * the socket's authority a refusal rejects the subscription, exactly as absence would.
   */
  readonly standing?: Effect.Effect<void, SubscriptionRejected> | undefined
}

export interface CableChannel<R = never> {
  /** The `channel` of the client's identifier, e.g. "ActorChannel". */
  readonly name: string
  /**
   * Authorizes and opens a subscription. The scope is the subscription's: it closes on
   * unsubscribe or when the socket ends, so resources acquired here (bus subscriptions) live
   * exactly as long. Anything acquired before answering is live before the confirmation.
   */
  readonly subscribe: (
    params: Readonly<Record<string, unknown>>,
    connection: CableConnection
  ) => Effect.Effect<Stream.Stream<unknown> | ChannelSubscription, SubscriptionRejected, R | Scope.Scope>
}

type Subscribe = CableChannel<never>["subscribe"]

export class CableChannels extends Context.Service<
  CableChannels,
  {
    readonly register: (name: string, subscribe: Subscribe) => Effect.Effect<void>
    readonly lookup: (name: string) => Subscribe | undefined
  }
>()("@troupe/http/cable/CableChannels") {
  static readonly layer = Layer.effect(
    CableChannels,
    Effect.sync(() => {
      const channels = new Map<string, Subscribe>()
      return CableChannels.of({
        register: (name, subscribe) =>
          channels.has(name)
            ? Effect.die(new Error(`The cable channel ${name} is registered twice`))
            : Effect.sync(() => void channels.set(name, subscribe)),
        lookup: (name) => channels.get(name)
      })
    })
  )
}

/** A layer that adds the channel to the registry, capturing the services it needs. */
export const registerChannel = <R>(channel: CableChannel<R>): Layer.Layer<never, never, CableChannels | R> =>
  Layer.effectDiscard(
    Effect.gen(function* () {
      const registry = yield* CableChannels
      const services = yield* Effect.context<R>()
      yield* registry.register(channel.name, (params, connection) =>
        channel
          .subscribe(params, connection)
          .pipe(Effect.updateContext((input: Context.Context<Scope.Scope>) => Context.merge(services, input)))
      )
    })
  )

/** Normalizes what `subscribe` answered. */
export const asSubscription = (answer: Stream.Stream<unknown> | ChannelSubscription): ChannelSubscription =>
  Stream.isStream(answer) ? { messages: answer } : answer
