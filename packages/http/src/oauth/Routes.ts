// The OAuth endpoints.
import { Layer } from "effect"
import { CancellationRoute, DeviceAuthorizationRoute } from "./Device.ts"
import { MetadataRoute } from "./Metadata.ts"
import { MethodNotAllowedRoutes } from "./MethodNotAllowed.ts"
import { RevokeRoute } from "./Revoke.ts"
import { TokenRoute } from "./Token.ts"

export const OAuthRoutes = Layer.mergeAll(
  DeviceAuthorizationRoute,
  CancellationRoute,
  TokenRoute,
  RevokeRoute,
  MetadataRoute,
  MethodNotAllowedRoutes
)
