// /openapi.json and /docs: the documented API, that is the JSON planes and the OAuth endpoints
// (which plain routes serve, so the API builder does not know them).
import { DocumentedApi } from "@troupe/contracts/Api"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApiSwagger, OpenApi } from "effect/http-api"

export const OpenApiRoute = HttpRouter.add(
  "GET",
  "/openapi.json",
  Effect.sync(() => HttpServerResponse.jsonUnsafe(OpenApi.fromApi(DocumentedApi)))
)

export const DocsRoute = HttpApiSwagger.layer(DocumentedApi, { path: "/docs" })

export const DocumentationRoutes = Layer.merge(OpenApiRoute, DocsRoute)
