// The composition root: database (migrated), domain services, routes and the HTTP server,
// assembled from a ServerConfig. The only module that knows every package.

import { NodeHttpServer } from "@effect/platform-node"
import { defaultHostOptions } from "@troupe/actors/ActorHost"
import { apiSessionActor } from "@troupe/actors/bindings/apiSession"
import { executorAddressActor } from "@troupe/actors/bindings/executorAddress"
import { workspaceActor } from "@troupe/actors/bindings/workspace"
import { runtimeLayer } from "@troupe/actors/Runtime"
import { Accounts } from "@troupe/domain/accounts/Accounts"
import { Credentials } from "@troupe/domain/accounts/Credentials"
import { HandleChanges } from "@troupe/domain/accounts/HandleChanges"
import { InstallationSecrets } from "@troupe/domain/accounts/InstallationSecrets"
import { Sessions } from "@troupe/domain/accounts/Sessions"
import { NamedAgents } from "@troupe/domain/agents/NamedAgents"
import { Budgets } from "@troupe/domain/budgets/Budgets"
import { ApplicationLogin } from "@troupe/domain/connections/ApplicationLogin"
import { deviceAuthorizationActor } from "@troupe/domain/connections/Connections"
import { DeviceFlow } from "@troupe/domain/connections/DeviceFlow"
import { Stewardship } from "@troupe/domain/connections/Stewardship"
import { ConversationContext } from "@troupe/domain/conversations/ContextEstimate"
import { ConversationMemory } from "@troupe/domain/conversations/ConversationMemory"
import { ConversationDefinition, Conversations } from "@troupe/domain/conversations/Conversations"
import { ConversationForks } from "@troupe/domain/conversations/Forks"
import { inputNamingRules } from "@troupe/domain/conversations/InputNamingRule"
import { Inputs } from "@troupe/domain/conversations/Inputs"
import { LiveReplies } from "@troupe/domain/conversations/LiveReplies"
import { ConversationSettings } from "@troupe/domain/conversations/Settings"
import { Turns } from "@troupe/domain/conversations/Turns"
import { Deployment } from "@troupe/domain/deployment/Deployment"
import { Updater } from "@troupe/domain/deployment/Updater"
import { Executors } from "@troupe/domain/executors/Executors"
import {
  InferenceRequestDefinition,
  InferenceRequests,
  inferenceNamingRules
} from "@troupe/domain/inference/InferenceRequests"
import { Idempotency } from "@troupe/domain/kernel/Idempotency"
import { RateLimiter } from "@troupe/domain/kernel/RateLimiter"
import { Memory } from "@troupe/domain/memory/Memory"
import { PromptDocuments } from "@troupe/domain/memory/PromptDocuments"
import { StoreEntries } from "@troupe/domain/memory/StoreEntries"
import { ModelCatalog } from "@troupe/domain/models/ModelCatalog"
import { makeOpenAiCompatible } from "@troupe/domain/models/OpenAiCompatible"
import { ClaimAttachments } from "@troupe/domain/runs/ClaimAttachments"
import { ConversationMail } from "@troupe/domain/runs/ConversationMail"
import { ConversationMemoryTools } from "@troupe/domain/runs/ConversationMemoryTools"
import { ExecutorInbox } from "@troupe/domain/runs/ExecutorInbox"
import { RunInputs } from "@troupe/domain/runs/RunInputs"
import { runNamingRules } from "@troupe/domain/runs/RunNamingRule"
import { RunDefinition, Runs } from "@troupe/domain/runs/Runs"
import { Readiness } from "@troupe/domain/runtime/Readiness"
import { RuntimeOperations } from "@troupe/domain/runtime/RuntimeOperations"
import { ScheduleDefinition } from "@troupe/domain/schedules/Executions"
import { Schedules } from "@troupe/domain/schedules/Schedules"
import { namingRulesOf } from "@troupe/domain/uploads/UploadAccess"
import { Uploads } from "@troupe/domain/uploads/Uploads"
import { Workspaces } from "@troupe/domain/workspaces/Workspaces"
import { answerClientErrors } from "@troupe/http/conventions/ClientErrors"
import { Routes } from "@troupe/http/Routes"
import { Stopping } from "@troupe/http/Stopping"
import { CsrfKey } from "@troupe/http/web/Csrf"
import { WebConfig } from "@troupe/http/web/WebConfig"
import { BlobStore } from "@troupe/storage/BlobStore"
import * as Database from "@troupe/storage/Database"
import { migrate } from "@troupe/storage/Migrations"
import { NodeLifetime } from "@troupe/storage/NodeLifetime"
import { repositoriesLayer } from "@troupe/storage/Repositories"
import { ByteSize, Duration, Effect, Layer, References } from "effect"
import { HttpIncomingMessage, HttpMiddleware, HttpRouter } from "effect/http"
import { IpNetwork } from "effect/net"
import { clusterNode } from "./ClusterNode.ts"
import type { ServerConfig } from "./Config.ts"
import { createListener } from "./Listener.ts"
import { telemetryLayer } from "./Telemetry.ts"

/** Request bodies larger than this are refused with 413 before any route reads them. */
export const maxBodySize = ByteSize.mebibytes(4)

/** The database with every migration applied, and the event bus that fits it. */
export const migratedDatabase = (config: ServerConfig["database"]) =>
  Layer.effectDiscard(Effect.orDie(migrate)).pipe(Layer.provideMerge(Database.layer(config)))

/** Every kind of actor this server hosts (definitions in actors/src/bindings). */
export const bindings = [apiSessionActor, deviceAuthorizationActor, executorAddressActor, workspaceActor]

/** The model catalog: the local models and those of TROUPE_MODEL_CATALOG. */
const modelCatalogLayer = (config: ServerConfig) =>
  ModelCatalog.layer({ file: config.modelCatalog, remoteProvider: makeOpenAiCompatible })

/**
 * The actor runtime (host, supervisors, timer and job runners) over the migrated database, with
 * every kind in `bindings`, the inference request, whose attempts call the catalog's providers, and
 * the conversation, whose replies are inference requests.
 */
export const actorLayer = (config: ServerConfig) =>
  Layer.unwrap(
    Effect.gen(function* () {
      const inferenceRequest = yield* InferenceRequestDefinition
      const conversation = yield* ConversationDefinition
      const run = yield* RunDefinition
      const schedule = yield* ScheduleDefinition
      return runtimeLayer(
        [...bindings, inferenceRequest, conversation, run, schedule],
        defaultHostOptions,
        config.cluster ? clusterNode(config.cluster) : undefined
      )
    })
  ).pipe(
    Layer.provideMerge(ScheduleDefinition.layer),
    Layer.provideMerge(ConversationDefinition.layer),
    Layer.provideMerge(RunDefinition.layer),
    Layer.provideMerge(InferenceRequestDefinition.layer),
    Layer.provideMerge(modelCatalogLayer(config)),
    Layer.provideMerge(BlobStore.layer(config.dataDir)),
    Layer.provideMerge(migratedDatabase(config.database))
  )

export const domainLayer = (config: ServerConfig) =>
  Layer.mergeAll(
    Accounts.layer,
    Sessions.layer,
    RateLimiter.layer,
    Idempotency.layer.pipe(Layer.provide(NodeLifetime.layer(config.database))),
    CsrfKey.layer.pipe(Layer.provide(InstallationSecrets.layer)),
    Credentials.layer,
    DeviceFlow.layer,
    ApplicationLogin.layer,
    Stewardship.layer,
    NamedAgents.layer,
    HandleChanges.layer,
    StoreEntries.layer,
    Workspaces.layer,
    Memory.layer,
    PromptDocuments.layer,
    Executors.layer,
    RuntimeOperations.layer,
    Readiness.layer,
    ClaimAttachments.layer,
    Budgets.layer,
    Deployment.layer.pipe(Layer.provide(Updater.layer(config.deploymentSocket)))
  ).pipe(
    // Services built on other domain services come on top of them; uploads read the naming
    // features' rules (the blob store under TROUPE_DATA_DIR comes with the actor layer).
    (base) =>
      Layer.mergeAll(
        InferenceRequests.layer,
        // The conversation doors' services read conversations through the Conversations service.
        Layer.mergeAll(
          Inputs.layer,
          // Runs' spawn and send use the input door: installed in the run actor's slot.
          ConversationMail.layer.pipe(Layer.provide(Inputs.layer)),
          Turns.layer,
          ConversationContext.layer,
          ConversationForks.layer,
          LiveReplies.layer,
          ConversationSettings.layer,
          ConversationMemory.layer,
          // A hosted run's memory calls use its conversation's memory door: installed likewise.
          ConversationMemoryTools.layer.pipe(Layer.provide(ConversationMemory.layer)),
          Schedules.layer,
          // Runs read a hosted run's standing through its conversation; uploads a run names are
          // read by the run's read rule.
          Layer.mergeAll(
            ExecutorInbox.layer,
            RunInputs.layer,
            Uploads.layer.pipe(Layer.provide(namingRulesOf(inferenceNamingRules, inputNamingRules, runNamingRules)))
          ).pipe(Layer.provideMerge(Runs.layer))
        ).pipe(Layer.provideMerge(Conversations.layer))
      ).pipe(Layer.provideMerge(base)),
    Layer.provideMerge(repositoriesLayer),
    Layer.provideMerge(actorLayer(config))
  )

const trustedProxies = (config: ServerConfig) =>
  config.trustedProxies.length === 0
    ? Layer.empty
    : HttpRouter.middleware(
        HttpMiddleware.xForwardedHeaders({ trustedProxies: config.trustedProxies.map(IpNetwork.fromStringUnsafe) }),
        { global: true }
      )

/** How long a stop lets ordinary requests in flight finish before their connections are closed. */
export const requestGrace = Duration.seconds(5)

/** Serves every route Troupe has (plus `extraRoutes`, which tests use) with the shared services. */
export const serverLayer = <R = never>(config: ServerConfig, extraRoutes?: Layer.Layer<never, never, R>) =>
  // Built after the routes, so a stop first ends the cable sockets and event streams (Stopping),
  // then closes the HTTP server, which waits for the requests in flight.
  Stopping.beginFirst.pipe(
    Layer.provideMerge(
      HttpRouter.serve(Layer.mergeAll(Routes, extraRoutes ?? Layer.empty, trustedProxies(config)), {
        disableLogger: true,
        disableListenLog: true
      })
    ),
    Layer.provide(Stopping.layer),
    Layer.provide(
      Layer.succeed(WebConfig, {
        setupSecret: config.setupSecret,
        secureCookies: config.publicBaseUrl.protocol === "https:",
        publicBaseUrl: config.publicBaseUrl,
        redirectPolicy: { allowed: config.redirectUris, allowHttp: config.allowHttpRedirects }
      })
    ),
    Layer.provide(Layer.succeed(HttpIncomingMessage.MaxBodySize, maxBodySize)),
    Layer.provideMerge(domainLayer(config)),
    // Listens first, answering 503 (/health 200) until the routes above are attached; on SIGTERM
    // requests in flight get `requestGrace` to finish before their connections are closed.
    Layer.provideMerge(
      NodeHttpServer.layer(() => answerClientErrors(createListener()), {
        port: config.port,
        host: config.host,
        gracefulShutdownTimeout: requestGrace
      })
    ),
    // Outermost, so it is built first and closed last: the spans of a graceful stop are exported.
    Layer.provide(telemetryLayer(config.telemetry)),
    // LOG_LEVEL governs every fiber the server starts: routes, domain, actors, runners, cluster.
    Layer.provide(Layer.succeed(References.MinimumLogLevel, config.logLevel))
  )
