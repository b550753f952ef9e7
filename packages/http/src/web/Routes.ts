// The HTML pages: first boot, sign-in and sign-out, home, the state visualizer, device approval,
// application consent, stewardship, personal access tokens and a conversation (live); and the
// browser upload door.
import { Layer } from "effect"
import { AuthorizePage, AuthorizeSubmit } from "./Authorize.ts"
import { AdjustBudget, BudgetsPage, OpenBudget, RevokeBudget, SetCostUnit } from "./Budgets.ts"
import { ConversationPageRoutes } from "./ConversationPage.ts"
import { DeviceApprovalPage, DeviceApprovalSubmit } from "./DeviceApproval.ts"
import { HomePage } from "./Home.ts"
import { InspectorRoutes } from "./Inspector.ts"
import { LoginPage, LoginSubmit, LogoutSubmit } from "./Login.ts"
import { SetupPage, SetupSubmit } from "./Setup.ts"
import { AgentsPage, RemoveAgent, RevokeMachine, RunnersPage } from "./Stewardship.ts"
import { CreateToken, RevokeToken, TokensPage } from "./Tokens.ts"
import { BrowserUpload } from "./Uploads.ts"

export const WebRoutes = Layer.mergeAll(
  HomePage,
  SetupPage,
  SetupSubmit,
  LoginPage,
  LoginSubmit,
  LogoutSubmit,
  InspectorRoutes,
  DeviceApprovalPage,
  DeviceApprovalSubmit,
  AuthorizePage,
  AuthorizeSubmit,
  AgentsPage,
  RunnersPage,
  RemoveAgent,
  RevokeMachine,
  TokensPage,
  CreateToken,
  RevokeToken,
  BudgetsPage,
  SetCostUnit,
  OpenBudget,
  AdjustBudget,
  RevokeBudget,
  BrowserUpload,
  ConversationPageRoutes
)
