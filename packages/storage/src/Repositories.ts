// Every repository the domain and the actor bindings reach, as one layer over the ambient
// SqlClient (the actor runtime's own tables, repositories/{Actors,ActorMessages,Outbox}.ts, stay
// function modules of the host). Helpers shared by several services name the repositories they
// use in their requirements: a service's layer provides the ones it captured (`withRepositories`), a
// step's row handler has them built on its step's client (`onStepClient`).
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql/SqlClient"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import { AccountsRepository } from "./repositories/Accounts.ts"
import { AgentsRepository } from "./repositories/Agents.ts"
import { AuditRepository } from "./repositories/Audit.ts"
import { AuthorizationCodesRepository } from "./repositories/AuthorizationCodes.ts"
import { BudgetsRepository } from "./repositories/Budgets.ts"
import { ConversationsRepository } from "./repositories/Conversations.ts"
import { CredentialsRepository } from "./repositories/Credentials.ts"
import { DeviceAuthorizationsRepository } from "./repositories/DeviceAuthorizations.ts"
import { ExecutorsRepository } from "./repositories/Executors.ts"
import { HandleReservationsRepository } from "./repositories/HandleReservations.ts"
import { IdempotencyReceiptsRepository } from "./repositories/IdempotencyReceipts.ts"
import { InferenceRequestsRepository } from "./repositories/InferenceRequests.ts"
import { InstallationSecretsRepository } from "./repositories/InstallationSecrets.ts"
import { MemoryRepository } from "./repositories/Memory.ts"
import { NamedAgentsRepository } from "./repositories/NamedAgents.ts"
import { PromptDocumentsRepository } from "./repositories/PromptDocuments.ts"
import { RateLimitWindowsRepository } from "./repositories/RateLimitWindows.ts"
import { RunsRepository } from "./repositories/Runs.ts"
import { SchedulesRepository } from "./repositories/Schedules.ts"
import { SessionsRepository } from "./repositories/Sessions.ts"
import { StoreEntriesRepository } from "./repositories/StoreEntries.ts"
import { UploadsRepository } from "./repositories/Uploads.ts"
import { WorkspacesRepository } from "./repositories/Workspaces.ts"

export const repositoriesLayer = Layer.mergeAll(
  AccountsRepository.layer,
  AgentsRepository.layer,
  AuditRepository.layer,
  AuthorizationCodesRepository.layer,
  BudgetsRepository.layer,
  CredentialsRepository.layer,
  DeviceAuthorizationsRepository.layer,
  ExecutorsRepository.layer,
  HandleReservationsRepository.layer,
  IdempotencyReceiptsRepository.layer,
  InferenceRequestsRepository.layer,
  ConversationsRepository.layer,
  InstallationSecretsRepository.layer,
  MemoryRepository.layer,
  NamedAgentsRepository.layer,
  PromptDocumentsRepository.layer,
  RateLimitWindowsRepository.layer,
  RunsRepository.layer,
  SchedulesRepository.layer,
  SessionsRepository.layer,
  StoreEntriesRepository.layer,
  UploadsRepository.layer,
  WorkspacesRepository.layer
)

/** Any of the repositories. */
export type Repositories = Layer.Success<typeof repositoriesLayer>

/**
 * Captures the SqlClient and the given repositories from the layer being built; answers a
 * function running an effect with exactly them (nothing else of the build's context), its
 * SqlError a defect as `withDatabase` makes it.
 */
export const withRepositories = <const Keys extends ReadonlyArray<Context.Key<Repositories, any>>>(...keys: Keys) =>
  Effect.map(Effect.context<SqlClient | Context.Service.Identifier<Keys[number]>>(), (context) => {
    const captured = Context.pick(SqlClient, ...keys)(context)
    return <A, E>(
      effect: Effect.Effect<A, E, SqlClient | Context.Service.Identifier<Keys[number]>>
    ): Effect.Effect<A, Exclude<E, SqlError>> =>
      effect.pipe(
        Effect.catchIf(isSqlError, (error) => Effect.die(error)),
        Effect.provideContext(captured)
      ) as Effect.Effect<A, Exclude<E, SqlError>>
  })

/**
 * Runs a row handler's effect with the repositories it asks for built on the step's SqlClient:
 * the actor host gives a row handler only its step's client (and its transactional actors).
 */
export const onStepClient = <A, E, R>(
  effect: Effect.Effect<A, E, R>
): Effect.Effect<A, E, Exclude<R, Repositories> | SqlClient> => Effect.provide(effect, repositoriesLayer)
