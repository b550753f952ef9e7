// Every route Troupe serves, as one layer for the server to mount: the JSON API, /openapi.json
// and the offline docs page, the HTML pages, the cable, and the shared conventions.
import { TroupeApi } from "@troupe/contracts/Api"
import { Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CableRoute } from "./cable/Cable.ts"
import { IdempotentLive } from "./conventions/Idempotency.ts"
import { RequestConventions } from "./conventions/RequestConventions.ts"
import { DocumentationRoutes } from "./Documentation.ts"
import { ExecutorAuthenticationLive } from "./executor/Authentication.ts"
import { ExecutorHandlers } from "./executor/Executor.ts"
import { ExecutorInboxHandlers } from "./executor/Inbox.ts"
import { ExecutorUploadsHandlers } from "./executor/Uploads.ts"
import { HealthRoutes } from "./Health.ts"
import { MemberAuthenticationLive } from "./member/Authentication.ts"
import { ConversationContextHandlers } from "./member/ConversationContext.ts"
import { ConversationInputsHandlers } from "./member/ConversationInputs.ts"
import { ConversationMemoryHandlers } from "./member/ConversationMemory.ts"
import { ConversationStoreEntriesHandlers } from "./member/ConversationStoreEntries.ts"
import { ConversationsHandlers } from "./member/Conversations.ts"
import { ExecutorsHandlers } from "./member/Executors.ts"
import { InferenceRequestBudgetLive, InferenceRequestsHandlers } from "./member/InferenceRequests.ts"
import { NamedAgentMemoryHandlers, ProfileMemoryHandlers, WorkspaceMemoryHandlers } from "./member/Memory.ts"
import { ModelsHandlers } from "./member/Models.ts"
import { NamedAgentsHandlers } from "./member/NamedAgents.ts"
import { PrincipalsHandlers } from "./member/Principals.ts"
import { MemberProfileHandlers } from "./member/Profile.ts"
import { PromptDocumentsHandlers } from "./member/PromptDocuments.ts"
import { RunInputsHandlers } from "./member/RunInputs.ts"
import { RunsHandlers } from "./member/Runs.ts"
import { SchedulesHandlers } from "./member/Schedules.ts"
import {
  IdempotencyKeyRequiredLive,
  ProfileStoreEntriesHandlers,
  StoreEntryBudgetLive,
  WorkspaceStoreEntriesHandlers
} from "./member/StoreEntries.ts"
import { ToolsHandlers } from "./member/Tools.ts"
import { TurnsHandlers } from "./member/Turns.ts"
import { UploadsHandlers } from "./member/Uploads.ts"
import { WorkspacesHandlers } from "./member/Workspaces.ts"
import { OAuthRoutes } from "./oauth/Routes.ts"
import { AdminHandlers } from "./platform/Admin.ts"
import { PlatformAuthenticationLive } from "./platform/Authentication.ts"
import { BudgetAdministratorLive, BudgetsHandlers } from "./platform/Budgets.ts"
import { DeploymentAdministratorLive, DeploymentHandlers, UpgradeKeyLive } from "./platform/Deployment.ts"
import { DeploymentStreamRoute } from "./platform/DeploymentStream.ts"
import { ProfileHandlers } from "./platform/Profile.ts"
import { SessionDoorLive, SessionHandlers } from "./platform/Session.ts"
import { WebRoutes } from "./web/Routes.ts"

/** Middleware implementations every API group may use. */
export const ApiMiddleware = Layer.mergeAll(
  PlatformAuthenticationLive,
  MemberAuthenticationLive,
  ExecutorAuthenticationLive,
  SessionDoorLive,
  IdempotentLive,
  StoreEntryBudgetLive,
  InferenceRequestBudgetLive,
  IdempotencyKeyRequiredLive,
  DeploymentAdministratorLive,
  UpgradeKeyLive,
  BudgetAdministratorLive
)

export const ApiRoutes = HttpApiBuilder.layer(TroupeApi).pipe(
  Layer.provide(
    Layer.mergeAll(
      SessionHandlers,
      ProfileHandlers,
      AdminHandlers,
      BudgetsHandlers,
      DeploymentHandlers,
      MemberProfileHandlers,
      NamedAgentsHandlers,
      PrincipalsHandlers,
      ProfileStoreEntriesHandlers,
      WorkspaceStoreEntriesHandlers,
      ExecutorHandlers,
      ExecutorsHandlers,
      WorkspacesHandlers,
      ProfileMemoryHandlers,
      WorkspaceMemoryHandlers,
      NamedAgentMemoryHandlers,
      PromptDocumentsHandlers,
      UploadsHandlers,
      ExecutorUploadsHandlers,
      ExecutorInboxHandlers,
      ModelsHandlers,
      ToolsHandlers,
      RunsHandlers,
      RunInputsHandlers,
      SchedulesHandlers,
      InferenceRequestsHandlers,
      ConversationsHandlers,
      ConversationInputsHandlers,
      TurnsHandlers,
      ConversationContextHandlers,
      ConversationMemoryHandlers,
      ConversationStoreEntriesHandlers
    ).pipe(Layer.provide(ApiMiddleware))
  )
)

export const Routes = Layer.mergeAll(
  ApiRoutes,
  DocumentationRoutes,
  WebRoutes,
  OAuthRoutes,
  CableRoute,
  DeploymentStreamRoute,
  HealthRoutes,
  RequestConventions
)
