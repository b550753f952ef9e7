// Handlers of the named-agent door: GET /agent_api/v1/profile/agents and GET, PUT, DELETE
// /agent_api/v1/profile/agents/{name}. Agent callers only (AgentCallerLive answers a human member
// credential 403 not_agent before the body is read); the rules live in the NamedAgents domain service.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { AgentCaller, NamedAgentName } from "@troupe/contracts/member/NamedAgents"
import { NamedAgents, nameGrammar } from "@troupe/domain/agents/NamedAgents"
import { Effect, Layer } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { answerRefusals } from "../conventions/DomainRefusals.ts"
import { envelope } from "../conventions/ErrorEnvelope.ts"

const namePrefix = "/agent_api/v1/profile/agents/"

/** Runs before authentication: a name outside the grammar is the router's own 404. */
export const NamedAgentNameLive = Layer.succeed(NamedAgentName, (httpEffect) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const path = request.url.split("?")[0]!
    if (!path.startsWith(namePrefix)) return httpEffect
    const name = path.slice(namePrefix.length).split("/")[0]!
    return nameGrammar.test(name) ? httpEffect : Effect.succeed(envelope(404, "not_found", "Not found"))
  })
)

/** Refuses a caller that is not an agent, before anything else is read. */
export const AgentCallerLive = Layer.succeed(AgentCaller, (httpEffect) =>
  Effect.gen(function* () {
    const { user } = yield* CurrentMemberCaller
    if (user.kind !== "agent") {
      return yield* errors.of("not_agent", "Named agents are declared by agents; this credential is a human's")
    }
    return yield* httpEffect
  })
)

/** The calling agent's user id (AgentCaller has refused every other caller). */
const agentId = Effect.map(CurrentMemberCaller, ({ user }) => user.id)

const handlers = HttpApiBuilder.group(
  TroupeApi,
  "namedAgents",
  Effect.fn(function* (handlers) {
    const named = yield* NamedAgents
    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const id = yield* agentId
          const agents = yield* answerRefusals(named.list(id))
          return { agents }
        })
      )
      .handle("show", ({ params }) =>
        Effect.gen(function* () {
          const id = yield* agentId
          const agent = yield* answerRefusals(named.show(id, params.name))
          return { agent }
        })
      )
      .handle("put", ({ params, payload }) =>
        Effect.gen(function* () {
          const id = yield* agentId
          return yield* answerRefusals(named.put(id, params.name, payload))
        })
      )
      .handle("remove", ({ params }) =>
        Effect.gen(function* () {
          const id = yield* agentId
          yield* answerRefusals(named.remove(id, params.name))
        })
      )
  })
)

export const NamedAgentsHandlers = handlers.pipe(Layer.provide([NamedAgentNameLive, AgentCallerLive]))
