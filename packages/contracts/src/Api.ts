// The JSON API of Troupe as one HttpApi: every JSON route, the source of /openapi.json and of
// the typed client. Groups are added here as later planes arrive. The documented API adds the
// OAuth endpoints, which plain routes serve.

import { HttpApi, OpenApi } from "effect/http-api"
import { ExecutorGroup } from "./executor/Executor.ts"
import { ExecutorInboxGroup } from "./executor/Inbox.ts"
import { ExecutorUploadsGroup } from "./executor/Uploads.ts"
import { ConversationContextGroup } from "./member/ConversationContext.ts"
import { ConversationInputsGroup } from "./member/ConversationInputs.ts"
import { ConversationMemoryGroup } from "./member/ConversationMemory.ts"
import { ConversationStoreEntriesGroup } from "./member/ConversationStoreEntries.ts"
import { ConversationsGroup } from "./member/Conversations.ts"
import { ExecutorsGroup } from "./member/Executors.ts"
import { InferenceRequestsGroup } from "./member/InferenceRequests.ts"
import { NamedAgentMemoryGroup, ProfileMemoryGroup, WorkspaceMemoryGroup } from "./member/Memory.ts"
import { ModelsGroup } from "./member/Models.ts"
import { NamedAgentsGroup } from "./member/NamedAgents.ts"
import { PrincipalsGroup } from "./member/Principals.ts"
import { MemberProfileGroup } from "./member/Profile.ts"
import { PromptDocumentsGroup } from "./member/PromptDocuments.ts"
import { RunInputsGroup } from "./member/RunInputs.ts"
import { RunsGroup } from "./member/Runs.ts"
import { SchedulesGroup } from "./member/Schedules.ts"
import { ProfileStoreEntriesGroup, WorkspaceStoreEntriesGroup } from "./member/StoreEntries.ts"
import { ToolsGroup } from "./member/Tools.ts"
import { TurnsGroup } from "./member/Turns.ts"
import { UploadsGroup } from "./member/Uploads.ts"
import { WorkspacesGroup } from "./member/Workspaces.ts"
import { OAuthGroup } from "./oauth/OAuth.ts"
import { AdminGroup } from "./platform/Admin.ts"
import { BudgetsGroup } from "./platform/Budgets.ts"
import { DeploymentGroup } from "./platform/Deployment.ts"
import { ProfileGroup } from "./platform/Profile.ts"
import { SessionGroup } from "./platform/Session.ts"
import { browserSessionScheme } from "./Security.ts"

const safeMethods = new Set(["get", "head"])

/**
 * The browser session cookie authorizes safe reads only (platform plane): other operations of
 * the middleware that declares both schemes list the bearer alone.
 */
const cookieReadsOnly = (spec: Record<string, any>) => {
  for (const operations of Object.values<Record<string, any>>(spec.paths)) {
    for (const [method, operation] of Object.entries<any>(operations)) {
      if (safeMethods.has(method) || !Array.isArray(operation.security)) continue
      operation.security = operation.security.filter(
        (requirement: Record<string, unknown>) => !(browserSessionScheme in requirement)
      )
    }
  }
  return spec
}

const cookieFirst = (requirement: Record<string, unknown>) => (browserSessionScheme in requirement ? 0 : 1)

/**
 * The cookie is listed first, before the platform bearer, in `security` and among the schemes:
 * the order readers of this document have always seen (the runtime tries the bearer first, see
 * platform/Caller.ts; OpenAPI gives alternatives no order).
 */
const cookieListedFirst = (spec: Record<string, any>) => {
  for (const operations of Object.values<Record<string, any>>(spec.paths)) {
    for (const operation of Object.values<any>(operations)) {
      if (Array.isArray(operation.security)) {
        operation.security = operation.security.toSorted(
          (a: Record<string, unknown>, b: Record<string, unknown>) => cookieFirst(a) - cookieFirst(b)
        )
      }
    }
  }
  const schemes: Record<string, unknown> = spec.components.securitySchemes
  if (browserSessionScheme in schemes) {
    const { [browserSessionScheme]: cookie, ...others } = schemes
    spec.components.securitySchemes = { [browserSessionScheme]: cookie, ...others }
  }
  return spec
}

export class TroupeApi extends HttpApi.make("troupe")
  .add(SessionGroup)
  .add(ProfileGroup)
  .add(AdminGroup)
  .add(BudgetsGroup)
  .add(DeploymentGroup)
  .add(MemberProfileGroup)
  .add(NamedAgentsGroup)
  .add(PrincipalsGroup)
  .add(ProfileStoreEntriesGroup)
  .add(ExecutorGroup)
  .add(ExecutorsGroup)
  .add(WorkspacesGroup)
  .add(WorkspaceStoreEntriesGroup)
  .add(ProfileMemoryGroup)
  .add(WorkspaceMemoryGroup)
  .add(NamedAgentMemoryGroup)
  .add(PromptDocumentsGroup)
  .add(UploadsGroup)
  .add(ExecutorUploadsGroup)
  .add(ExecutorInboxGroup)
  .add(ModelsGroup)
  .add(ToolsGroup)
  .add(RunsGroup)
  .add(RunInputsGroup)
  .add(SchedulesGroup)
  .add(InferenceRequestsGroup)
  .add(ConversationsGroup)
  .add(ConversationInputsGroup)
  .add(TurnsGroup)
  .add(ConversationContextGroup)
  .add(ConversationMemoryGroup)
  .add(ConversationStoreEntriesGroup)
  .annotateMerge(
    OpenApi.annotations({
      title: "Troupe API",
      description: "Troupe: an OAuth authorization server and work-coordination platform for agent programs.",
      transform: (spec) => cookieListedFirst(cookieReadsOnly(spec))
    })
  ) {}

/** What /openapi.json and /docs describe: the JSON API and the OAuth endpoints. */
export const DocumentedApi = TroupeApi.add(OAuthGroup)
