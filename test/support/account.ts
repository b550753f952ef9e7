// The account most member-plane tests stand on: the owner and a member, each signed in and
// stewarding agents connected through the real device flow, and each human's member token.
import { type ConnectedAgent, connectAgent, signedIn } from "./members.ts"
import { createMember, createOwner, memberCredentials, ownerCredentials, personalToken } from "./people.ts"
import type { TestServer } from "./server.ts"

/** Creates both humans and connects the agents named for each (identifiers, in order). */
export const twoStewards = async (
  server: TestServer,
  agents: { readonly owner: ReadonlyArray<string>; readonly member: ReadonlyArray<string> }
) => {
  const owner = await createOwner(server)
  const member = await createMember(server)
  const ownerBrowser = await signedIn(server, ownerCredentials)
  const memberBrowser = await signedIn(server, memberCredentials)
  const ownerAgents: Array<ConnectedAgent> = []
  for (const identifier of agents.owner) ownerAgents.push(await connectAgent(server, ownerBrowser, identifier))
  const memberAgents: Array<ConnectedAgent> = []
  for (const identifier of agents.member) memberAgents.push(await connectAgent(server, memberBrowser, identifier))
  return {
    owner,
    member,
    ownerBrowser,
    ownerAgents,
    memberAgents,
    ownerToken: await personalToken(server, owner),
    memberToken: await personalToken(server, member)
  }
}
