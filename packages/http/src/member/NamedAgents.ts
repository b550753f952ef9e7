// Handlers of the named-agent door: GET /agent_api/v1/profile/agents and GET, PUT, DELETE
// /agent_api/v1/profile/agents/{name}. Agent callers only (a human member credential is 403
// not_agent); the rules live in the NamedAgents domain service.
import { TroupeApi } from "@troupe/contracts/Api"
import { errors } from "@troupe/contracts/Errors"
import { CurrentMemberCaller } from "@troupe/contracts/member/Caller"
import { NamedAgentName } from "@troupe/contracts/member/NamedAgents"
import { NamedAgents, nameGrammar } from "@troupe/domain/agents/NamedAgents"
import { Effect, Layer } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
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

/** The caller, refused before anything else is read unless it is an agent. */
const agentCaller = Effect.flatMap(CurrentMemberCaller, ({ user }) =>
  user.kind === "agent"
    ? Effect.succeed(user)
    : Effect.fail(errors.of("not_agent", "Named agents are declared by agents; this credential is a human's"))
)

const handlers = HttpApiBuilder.group(
  TroupeApi,
  "namedAgents",
  Effect.fn(function* (handlers) {
    const named = yield* NamedAgents
    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const user = yield* agentCaller
          const agents = yield* answerRefusals(named.list(user.id))
          return { agents }
        })
      )
      .handle("show", ({ params }) =>
        Effect.gen(function* () {
          const user = yield* agentCaller
          const agent = yield* answerRefusals(named.show(user.id, params.name))
          return { agent }
        })
      )
      .handle("put", ({ params, payload }) =>
        Effect.gen(function* () {
          const user = yield* agentCaller
          const { agent, created } = yield* answerRefusals(named.put(user.id, params.name, payload))
          return HttpServerResponse.jsonUnsafe({ agent }, { status: created ? 201 : 200 })
        })
      )
      .handle("remove", ({ params }) =>
        Effect.gen(function* () {
          const user = yield* agentCaller
          yield* answerRefusals(named.remove(user.id, params.name))
        })
      )
  })
)

export const NamedAgentsHandlers = handlers.pipe(Layer.provide(NamedAgentNameLive))
