// The executor-transport caller: the delivery address a transport credential speaks for.
import { Context } from "effect"
import { HttpApiMiddleware } from "effect/http-api"
import { Unauthorized } from "../Errors.ts"
import { executorBearer } from "../Security.ts"

export interface ExecutorCaller {
  readonly executor: {
    readonly id: bigint
    readonly publicId: string
    readonly kind: "agent_application" | "runner" | "tool_provider"
    readonly status: "active" | "revoked"
    readonly displayName: string
    /** The epoch the credential carries: the address's, or the one its next step takes. */
    readonly credentialEpoch: number
  }
}

export class CurrentExecutorCaller extends Context.Service<CurrentExecutorCaller, ExecutorCaller>()(
  "@troupe/contracts/executor/CurrentExecutorCaller"
) {}

/** Executor plane: a transport credential; member and platform credentials are refused. */
export class ExecutorAuthentication extends HttpApiMiddleware.Service<
  ExecutorAuthentication,
  { provides: CurrentExecutorCaller }
>()("@troupe/contracts/executor/ExecutorAuthentication", {
  error: Unauthorized,
  security: { executor_bearer: executorBearer }
}) {}
