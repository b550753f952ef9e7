// The OAuth endpoints as documentation: their bodies (form or JSON), answers and RFC 6749 errors,
// for /openapi.json and /docs. They are served by plain routes (http/src/oauth, web/Authorize.ts),
// which read forms and JSON alike and answer `{error, error_description}`; this group is never
// mounted by the API builder.
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"

const described = <S extends Schema.Top>(schema: S, description: string) => schema.annotate({ description })

const text = Schema.String
const optionalText = (description: string) => Schema.optionalKey(described(Schema.String, description))

const DeviceClient = described(
  Schema.Literals(["svc-first-party-connector", "svc-application"]),
  "The public client: svc-first-party-connector (agent programs and runners) or svc-application"
)

/** `{error, error_description}` (RFC 6749 section 5.2), the shape of every /oauth/* refusal. */
const oauthErrorFields = {
  error: described(text, "The RFC 6749 error code, e.g. invalid_request, invalid_client, invalid_grant"),
  error_description: described(text, "For humans; not part of the contract")
}

export const OAuthError = Schema.Struct(oauthErrorFields).pipe(HttpApiSchema.status(400))

/** 429 with Retry-After (whole seconds): a per-IP budget of the endpoint is spent. */
export class OAuthRateLimited extends Schema.TaggedError<OAuthRateLimited>()("OAuthRateLimited", {
  retryAfterSeconds: Schema.Int
}) {}

export const OAuthRateLimitedResponse = OAuthRateLimited.pipe(
  HttpApiSchema.encodeToWithHeaders(
    {
      body: Schema.Struct(oauthErrorFields).pipe(HttpApiSchema.status(429)),
      headers: { "retry-after": Schema.FiniteFromString }
    },
    {
      encode: (e) => ({
        body: { error: "rate_limited", error_description: "Too many requests" },
        headers: { "retry-after": e.retryAfterSeconds }
      }),
      decode: ({ headers }) => new OAuthRateLimited({ retryAfterSeconds: headers["retry-after"] })
    }
  )
)

/**
 * A form body (application/x-www-form-urlencoded) or the same members as a JSON object of
 * strings. Unknown parameters are ignored.
 */
const formOrJson = <F extends Schema.Struct.Fields>(fields: F) => {
  const body = Schema.StructWithRest(Schema.Struct(fields), [Schema.Record(Schema.String, Schema.String)])
  return [body.pipe(HttpApiSchema.asFormUrlEncoded()), body] as const
}

const registrationFields = {
  agent_identifier: optionalText("Branch A (agent) and A+B: 1 to 128 printable characters, exact"),
  agent_display_name: optionalText("Branch A and A+B: at most 100 characters"),
  executor_display_name: optionalText("Branch A and A+B: at most 100 characters"),
  registration_identifier: optionalText("Branch B (machine) and A+B: at most 128 characters, exact"),
  runner_display_name: optionalText("Branch B and A+B: at most 100 characters"),
  executor_kind: Schema.optionalKey(
    described(Schema.Literals(["runner", "tool_provider"]), "Branch B: runner (default) or tool_provider")
  ),
  assignment_agent_public_id: optionalText("Branch B runners only: the paired agent's public id")
}

const DeviceAuthorizationRequest = {
  client_id: DeviceClient,
  scope: optionalText("Accepted and ignored"),
  ...registrationFields
}

const DeviceAuthorization = Schema.Struct({
  device_code: described(text, "The client's secret for polling /oauth/token"),
  user_code: described(text, "XXXX-XXXX, for the human"),
  verification_uri: text,
  verification_uri_complete: described(text, "verification_uri carrying the user code"),
  expires_in: described(Schema.Natural, "Seconds (900)"),
  interval: described(Schema.Natural, "Seconds between polls (5)")
})

const InitializationRequired = Schema.Struct({
  error: Schema.Literal("initialization_required"),
  error_description: text,
  initialization_uri: described(text, "Where the owner sets the installation up (/setup)")
}).pipe(HttpApiSchema.status(409))

const Cancellation = { client_id: DeviceClient, device_code: text }

const CancellationAnswer = Schema.Struct({
  status: described(
    Schema.Literals(["canceled", "consumed"]),
    "canceled: stop and forget; consumed: the grant was issued, keep polling and adopt the credentials"
  )
})

const TokenRequest = {
  grant_type: Schema.Literals(["urn:ietf:params:oauth:grant-type:device_code", "authorization_code", "refresh_token"]),
  client_id: DeviceClient,
  device_code: optionalText("Device grant"),
  code: optionalText("authorization_code grant (svc-application)"),
  redirect_uri: optionalText("authorization_code grant: the redirect_uri of the authorization request"),
  code_verifier: optionalText("authorization_code grant: the PKCE verifier (S256)"),
  refresh_token: optionalText("refresh_token grant: the newest refresh token of the lineage")
}

const RunnerBundle = Schema.Struct({
  access_token: text,
  token_type: Schema.Literal("Bearer"),
  expires_in: described(Schema.Natural, "Seconds"),
  refresh_token: text
})

const bundleFields = {
  ...RunnerBundle.fields,
  plane: described(Schema.Literals(["member", "executor_transport", "platform"]), "The plane the access token opens"),
  executor_access_token: optionalText("Branch A: the agent application's executor transport credential")
}

const ConnectorTokens = described(
  Schema.Struct({ ...bundleFields, runner: Schema.optionalKey(RunnerBundle) }),
  "Device grant and refresh: the lineage's bundle (A+B adds the runner's); never a scope member"
)

const ApplicationTokens = described(
  Schema.Struct({
    ...bundleFields,
    scope: Schema.Literal("application"),
    user: Schema.Struct({ public_id: text, display_name: text, role: Schema.Literals(["owner", "admin", "member"]) }),
    agent: Schema.optionalKey(Schema.Struct(bundleFields)),
    runner: Schema.optionalKey(RunnerBundle)
  }),
  "svc-application: the human's platform bundle, with the agent and runner bundles of a first connection"
)

const TokenError = Schema.Struct({
  ...oauthErrorFields,
  interval: Schema.optionalKey(
    described(Schema.Natural, "slow_down only: the polling interval now required, in seconds")
  )
}).pipe(HttpApiSchema.status(400))

const Revocation = {
  client_id: DeviceClient,
  token: described(text, "A refresh token (ends its lineage) or an access token (ends itself)"),
  token_type_hint: optionalText("Accepted and ignored (RFC 7009)")
}

const Metadata = Schema.Struct({
  issuer: text,
  authorization_endpoint: text,
  token_endpoint: text,
  device_authorization_endpoint: text,
  revocation_endpoint: text,
  grant_types_supported: Schema.Array(text),
  response_types_supported: Schema.Array(text),
  code_challenge_methods_supported: Schema.Array(text),
  token_endpoint_auth_methods_supported: Schema.Array(text),
  revocation_endpoint_auth_methods_supported: Schema.Array(text)
})

const AuthorizeQuery = {
  client_id: Schema.Literal("svc-application"),
  response_type: Schema.Literal("code"),
  redirect_uri: described(text, "An allowed callback (see SERVICE_OAUTH_REDIRECT_URIS)"),
  state: Schema.optionalKey(text),
  code_challenge: described(text, "PKCE: base64url SHA-256 of the verifier (43 characters)"),
  code_challenge_method: Schema.Literal("S256"),
  scope: Schema.optionalKey(Schema.Literal("application")),
  connection_mode: Schema.optionalKey(
    described(Schema.Literals(["connect", "login"]), "connect (default) also connects the registered agent or runner")
  ),
  ...registrationFields
}

const Html = (status: number, description: string) =>
  described(
    Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(status)),
    description
  )

const Redirect = described(
  HttpApiSchema.Empty(303),
  "To /login or /setup (then back here), or to redirect_uri with code and state, or with an RFC 6749 error"
)

export class OAuthGroup extends HttpApiGroup.make("oauth")
  .add(
    HttpApiEndpoint.post("deviceAuthorization", "/oauth/device_authorization", {
      payload: formOrJson(DeviceAuthorizationRequest),
      success: DeviceAuthorization,
      error: [OAuthError, InitializationRequired, OAuthRateLimitedResponse]
    }).annotate(
      OpenApi.Description,
      "Starts a device connection (RFC 8628). Branch A connects an agent program (agent_identifier, " +
        "agent_display_name, executor_display_name), branch B a runner or tool provider " +
        "(registration_identifier, runner_display_name), A+B both. 30 per minute per source IP."
    ),
    HttpApiEndpoint.post("deviceAuthorizationCancellation", "/oauth/device_authorization/cancellation", {
      payload: formOrJson(Cancellation),
      success: CancellationAnswer,
      error: [OAuthError, OAuthRateLimitedResponse]
    }).annotate(OpenApi.Description, "Asks which side won, cancel or consume. 60 per minute per source IP."),
    HttpApiEndpoint.post("token", "/oauth/token", {
      payload: formOrJson(TokenRequest),
      success: Schema.Union([ApplicationTokens, ConnectorTokens]),
      error: TokenError
    }).annotate(
      OpenApi.Description,
      "The device grant (poll every interval seconds while the answer is authorization_pending; slow_down " +
        "raises the interval), the authorization_code grant with PKCE, and refresh (rotates the lineage)."
    ),
    HttpApiEndpoint.post("revoke", "/oauth/revoke", {
      payload: formOrJson(Revocation),
      success: described(HttpApiSchema.Empty(200), "Revoked, or nothing to revoke: an empty body"),
      error: [OAuthError, OAuthRateLimitedResponse]
    }).annotate(
      OpenApi.Description,
      "RFC 7009: always 200 with an empty body, whatever the token was. 60 per minute per source IP."
    ),
    HttpApiEndpoint.get("authorize", "/oauth/authorize", {
      query: AuthorizeQuery,
      success: [Html(200, "The consent page, for a signed-in human"), Redirect],
      error: Html(400, "The request cannot be sent back (unknown client or callback)")
    }).annotate(
      OpenApi.Description,
      "The application client's authorization request (RFC 6749 with PKCE), opened in the human's browser."
    ),
    HttpApiEndpoint.get("metadata", "/.well-known/oauth-authorization-server", {
      success: Metadata
    }).annotate(OpenApi.Description, "Authorization server metadata (RFC 8414).")
  )
  .annotateMerge(
    OpenApi.annotations({
      title: "OAuth",
      description:
        "Public clients, no client secret. Bodies are application/x-www-form-urlencoded or JSON objects of " +
        'strings; refusals answer {"error", "error_description"} (RFC 6749).'
    })
  ) {}
