// Executor plane: POST /agent_api/v1/executor/uploads captures a result file, the same multipart
// upload as the member door (member/Uploads.ts), with a transport credential (a member one is
// 401). The executor is the creator; its uploads have no member reader but those of rows naming them.
import { HttpApiGroup, OpenApi } from "effect/http-api"
import { ingestEndpoint } from "../member/Uploads.ts"
import { ExecutorAuthentication } from "./Caller.ts"

export class ExecutorUploadsGroup extends HttpApiGroup.make("executorUploads")
  .add(ingestEndpoint("/agent_api/v1/executor/uploads"))
  .middleware(ExecutorAuthentication)
  .annotateMerge(OpenApi.annotations({ title: "Executor plane: uploads" })) {}
