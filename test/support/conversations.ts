// Waiting on a conversation from HTTP tests: resolves once `done` holds, checked now and after each
// step the conversation's actor commits (never by sleeping).
import type { TestServer } from "./server.ts"
import { waitForSteps } from "./steps.ts"

export const waitForConversation = (server: TestServer, conversationId: string, done: () => Promise<boolean>) =>
  waitForSteps(server, done, { kind: "conversation", actorId: conversationId })
