// The JSON API of Troupe as one HttpApi: every JSON route, the source of /openapi.json and of
// the typed client. Groups are added here as later planes arrive.
import { HttpApi, OpenApi } from "effect/http-api"
import { ExecutorGroup } from "./executor/Executor.ts"
import { ExecutorsGroup } from "./member/Executors.ts"
import { MemberProfileGroup } from "./member/Profile.ts"
import { ProfileStoreEntriesGroup, WorkspaceStoreEntriesGroup } from "./member/StoreEntries.ts"
import { WorkspacesGroup } from "./member/Workspaces.ts"
import { AdminGroup } from "./platform/Admin.ts"
import { ProfileGroup } from "./platform/Profile.ts"
import { SessionGroup } from "./platform/Session.ts"

export class TroupeApi extends HttpApi.make("troupe")
  .add(SessionGroup)
  .add(ProfileGroup)
  .add(AdminGroup)
  .add(MemberProfileGroup)
  .add(ProfileStoreEntriesGroup)
  .add(ExecutorGroup)
  .add(ExecutorsGroup)
  .add(WorkspacesGroup)
  .add(WorkspaceStoreEntriesGroup)
  .annotateMerge(
    OpenApi.annotations({
      title: "Troupe API",
      description: "Troupe: an OAuth authorization server and work-coordination platform for agent programs."
    })
  ) {}
