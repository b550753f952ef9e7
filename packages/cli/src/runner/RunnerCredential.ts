// The reference runner's transport credential: connected once through the device flow (a person
// approves the printed code), kept in a state file readable by its owner only, refreshed after a
// 401 (the new pair is saved before it is used), and connected afresh when the server refuses it.
import { createHash } from "node:crypto"
import { hostname } from "node:os"
import { basename, dirname, extname, join, resolve } from "node:path"
import { renewingBearer } from "@troupe/client/Bearer"
import { makeTroupeClient } from "@troupe/client/Client"
import { makeDeviceFlow } from "@troupe/client/DeviceFlow"
import { Console, Data, Effect, FileSystem, Schema } from "effect"

/** The device flow answered a credential of another plane. */
export class NotARunnerCredential extends Data.TaggedError("NotARunnerCredential")<{ readonly plane: string }> {
  override get message() {
    return `The server issued a ${this.plane} credential, not a runner's`
  }
}

const State = Schema.Struct({
  base_url: Schema.String,
  registration_identifier: Schema.String,
  access_token: Schema.String,
  refresh_token: Schema.String
})
type State = typeof State.Type

/** The default state file: beside the configuration, `<name>.credential.json`. */
export const defaultStatePath = (configPath: string) =>
  join(dirname(configPath), `${basename(configPath, extname(configPath))}.credential.json`)

/**
 * The runner's registration identifier: this host and the configuration's absolute path, so the
 * same runner reconnecting (even without its state file) keeps its address.
 */
export const registrationIdentifier = (configPath: string) =>
  `troupe-runner:${hostname().slice(0, 64)}:${createHash("sha256").update(resolve(configPath)).digest("hex").slice(0, 16)}`

const decodeState = Schema.decodeUnknownOption(Schema.fromJsonString(State))

const readState = (path: string) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    if (!(yield* fs.exists(path))) return undefined
    const state = decodeState(yield* fs.readFileString(path))
    if (state._tag === "None") {
      yield* Console.error(`troupe runner: ignoring ${path}, which is not a runner credential`)
      return undefined
    }
    return state.value
  })

/** Written whole beside the old one and moved over it, mode 0600. */
const writeState = (path: string, state: State) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const next = `${path}.${process.pid}.tmp`
    yield* fs.writeFileString(next, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
    yield* fs.chmod(next, 0o600)
    yield* fs.rename(next, path)
  })

export interface ConnectOptions {
  readonly baseUrl: string
  readonly statePath: string
  readonly identifier: string
  readonly displayName: string
}

/** Runs the device flow, printing what the person approving needs; answers the new state. */
const connectAfresh = (options: ConnectOptions) =>
  Effect.gen(function* () {
    const flow = yield* makeDeviceFlow(options.baseUrl)
    const started = yield* flow.start({
      registration_identifier: options.identifier,
      runner_display_name: options.displayName,
      executor_kind: "runner"
    })
    yield* Console.log(
      [
        `To connect this runner, approve it in a browser signed in to ${options.baseUrl}:`,
        `  open ${started.verification_uri_complete}`,
        `  or go to ${started.verification_uri} and enter the code ${started.user_code}`,
        `Waiting for approval (the code expires in ${Math.round(started.expires_in / 60)} minutes)...`
      ].join("\n")
    )
    const tokens = yield* flow.poll(started)
    if (tokens.plane !== "executor_transport") {
      return yield* new NotARunnerCredential({ plane: tokens.plane })
    }
    const state: State = {
      base_url: options.baseUrl,
      registration_identifier: options.identifier,
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token
    }
    yield* writeState(options.statePath, state)
    yield* Console.log(`connected; credential saved in ${options.statePath}`)
    return state
  })

/**
 * The runner's credential as a renewing bearer, with the address it speaks for: the stored one
 * when the server still takes it, else a fresh device-flow connection.
 */
export const connectRunner = (options: ConnectOptions) =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const flow = yield* makeDeviceFlow(options.baseUrl)
    const bearerOf = (state: State) =>
      renewingBearer({
        tokens: state,
        refresh: (refreshToken) => flow.refresh(refreshToken),
        saved: (tokens) =>
          writeState(options.statePath, {
            ...state,
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token
          }).pipe(
            Effect.provideService(FileSystem.FileSystem, fs),
            Effect.catch((error) => Console.error(`troupe runner: could not save the credential: ${error.message}`))
          )
      })
    const stored = yield* readState(options.statePath)
    if (stored !== undefined && stored.base_url === options.baseUrl) {
      const bearer = yield* bearerOf(stored)
      const client = yield* makeTroupeClient({ baseUrl: options.baseUrl, bearer })
      const self = yield* client.executor.show().pipe(
        Effect.map((answer) => answer.executor),
        Effect.catchTag("Unauthorized", () => Effect.succeed(undefined))
      )
      if (self !== undefined) {
        yield* Console.log(`connected with the credential saved in ${options.statePath}`)
        return { bearer, executor: self }
      }
      yield* Console.log("The server refused the runner's credential (revoked or re-paired); connecting again.")
    }
    const state = yield* connectAfresh(options)
    const bearer = yield* bearerOf(state)
    const client = yield* makeTroupeClient({ baseUrl: options.baseUrl, bearer })
    return { bearer, executor: (yield* client.executor.show()).executor }
  })
