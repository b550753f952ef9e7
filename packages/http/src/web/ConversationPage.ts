// GET /conversations/{id}: a conversation for a signed-in human who may read it (the standing
// rules, with the human as the caller): its timeline and its queue as they are, then live over the
// cable (public/conversation.js, the stock Action Cable client over the browser cookie) — the
// feed's items after the page's cursor, and the transcript's deltas as a reply streams in. Its
// scripts are served here, from this package and node_modules, so the page needs no external asset.
// The feed's items carry no input text: the page reads its queue (texts and speakers) from its own
// cookie route, GET /conversations/{id}/queue, under the same rules as the page.
import { readFile } from "node:fs/promises"
import { callerOfHuman } from "@troupe/domain/accounts/Caller"
import { Inputs } from "@troupe/domain/conversations/Inputs"
import { LiveReplies } from "@troupe/domain/conversations/LiveReplies"
import { Turns } from "@troupe/domain/conversations/Turns"
import type { InputView, TurnView } from "@troupe/domain/conversations/Views"
import { inspectorAssets } from "@troupe/inspector/Assets"
import { Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { envelope } from "../conventions/ErrorEnvelope.ts"
import { escapeHtml, page, redirect } from "./Html.ts"
import { currentBrowserSession } from "./Session.ts"

const assets: Readonly<Record<string, string>> = {
  "conversation.js": new URL("./public/conversation.js", import.meta.url).pathname,
  "actioncable.esm.js": inspectorAssets["actioncable.esm.js"]!.path
}

/** The newest turns the page opens with. */
const windowSize = "100"

const styles = `
  * { box-sizing: border-box; }
  body { font: 15px/1.5 system-ui, sans-serif; margin: 0; background: #f6f6f4; color: #1d1d1b; }
  header { display: flex; gap: 1rem; align-items: center; padding: .6rem 1rem; background: #2b4c7e; color: #fff; }
  header h1 { font-size: 1.1rem; margin: 0; }
  header .who { margin-left: auto; opacity: .85; }
  #live { font-size: .85rem; padding: .1rem .5rem; border-radius: 3px; background: rgba(255,255,255,.2); }
  main { max-width: 52rem; margin: 1rem auto; padding: 0 1rem; display: grid; gap: 1rem; }
  section { background: #fff; padding: 1rem 1.25rem; border-radius: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
  h2 { font-size: 1rem; margin: 0 0 .5rem; }
  ol { list-style: none; margin: 0; padding: 0; }
  li { padding: .5rem 0; border-top: 1px solid #eee; }
  li:first-child { border-top: 0; }
  .meta { font-size: .8rem; color: #666; display: flex; gap: .5rem; flex-wrap: wrap; }
  .prompt { color: #444; font-style: italic; white-space: pre-wrap; }
  .reasoning { color: #777; font-size: .9rem; white-space: pre-wrap; }
  .reasoning:empty, .prompt:empty { display: none; }
  .content { white-space: pre-wrap; }
  [data-status="running"] .content::after { content: "▍"; color: #2b4c7e; }
  [data-status="failed"] .status, [data-status="canceled"] .status, [data-status="timed_out"] .status { color: #8a1c12; }
  #turns:empty::after { content: "No turns yet."; color: #888; }
  #inputs:empty::after { content: "Nothing waits in the queue."; color: #888; }
`

const turnItem = (turn: TurnView) => {
  const who = "speaker" in turn && turn.speaker !== undefined ? turn.speaker.display_name : turn.role
  const prompt = turn.kind === "direct_reply" ? (turn.prompt_text ?? "") : ""
  return `<li class="turn" id="turn-${escapeHtml(turn.public_id)}" data-status="${escapeHtml(turn.status)}">
<div class="meta"><span class="position">#${turn.position}</span><span class="who">${escapeHtml(who)}</span><span class="kind">${escapeHtml(turn.kind)}</span><span class="status">${escapeHtml(turn.status)}</span></div>
<div class="prompt">${escapeHtml(prompt)}</div><div class="reasoning"></div><div class="content">${escapeHtml(turn.content ?? "")}</div></li>`
}

const inputItem = (input: InputView) =>
  `<li class="input" id="input-${escapeHtml(input.public_id)}" data-state="${escapeHtml(input.state)}">
<div class="meta"><span class="position">#${input.queue_position}</span><span class="who">${escapeHtml(input.speaker?.display_name ?? "")}</span><span class="kind">${escapeHtml(input.kind)}</span><span class="state">${escapeHtml(input.state)}</span></div>
<div class="content">${escapeHtml(input.text)}</div></li>`

const shell = (
  who: string,
  view: {
    readonly title: string
    readonly workspaceId: string
    readonly conversationId: string
    readonly after: string
    readonly turns: ReadonlyArray<TurnView>
    readonly inputs: ReadonlyArray<InputView>
  }
) =>
  HttpServerResponse.text(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(view.title)} · Troupe</title>
<style>${styles}</style>
</head>
<body>
<header><h1>${escapeHtml(view.title)}</h1><span id="live">connecting</span><span class="who">${escapeHtml(who)}</span></header>
<main id="conversation" data-workspace-id="${escapeHtml(view.workspaceId)}" data-conversation-id="${escapeHtml(view.conversationId)}" data-after="${escapeHtml(view.after)}">
<section><h2>Timeline</h2><ol id="turns">${view.turns.map(turnItem).join("")}</ol></section>
<section><h2>Queue</h2><ol id="inputs">${view.inputs.map(inputItem).join("")}</ol></section>
</main>
<script type="module" src="/assets/conversation.js"></script>
</body>
</html>`,
    {
      contentType: "text/html; charset=utf-8",
      headers: {
        "cache-control": "no-store",
        "content-security-policy":
          "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
        "x-frame-options": "DENY"
      }
    }
  )

const notFound = page("Not found", "<h1>Not found</h1><p>There is no such conversation.</p>", 404)

export const ConversationPage = HttpRouter.add(
  "GET",
  "/conversations/:id",
  Effect.gen(function* () {
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) {
      const request = yield* HttpServerRequest.HttpServerRequest
      return redirect(`/login?return_to=${encodeURIComponent(request.url)}`)
    }
    const { user } = current.value
    const caller = callerOfHuman(user)
    const live = yield* LiveReplies
    const conversationId = (yield* HttpRouter.params).id ?? ""
    return yield* Effect.gen(function* () {
      const standing = yield* live.locate(caller, conversationId)
      const workspaceId = standing.workspacePublicId
      const publicId = standing.row.public_id
      // The cursor before the rows: what they already show may come again live, nothing is missed.
      const after = yield* live.cursor(publicId)
      const { turns } = yield* (yield* Turns).list(caller, workspaceId, publicId, { limit: windowSize })
      const { inputs } = yield* (yield* Inputs).list(caller, workspaceId, publicId)
      return shell(user.display_name, {
        title: standing.row.title ?? "Conversation",
        workspaceId,
        conversationId: publicId,
        after,
        turns,
        inputs
      })
    }).pipe(Effect.catch(() => Effect.succeed(notFound)))
  })
)

/** The queue as the page shows it, for the page's script: the same reader and rules as the page. */
export const ConversationQueue = HttpRouter.add(
  "GET",
  "/conversations/:id/queue",
  Effect.gen(function* () {
    const noStore = { "cache-control": "no-store" }
    const current = yield* currentBrowserSession
    if (Option.isNone(current)) return envelope(401, "unauthorized", "Sign in first", noStore)
    const caller = callerOfHuman(current.value.user)
    const conversationId = (yield* HttpRouter.params).id ?? ""
    return yield* Effect.gen(function* () {
      const standing = yield* (yield* LiveReplies).locate(caller, conversationId)
      const { inputs } = yield* (yield* Inputs).list(caller, standing.workspacePublicId, standing.row.public_id)
      return HttpServerResponse.jsonUnsafe({ inputs }, { headers: noStore })
    }).pipe(Effect.catch(() => Effect.succeed(envelope(404, "not_found", "There is no such conversation", noStore))))
  })
)

const assetCache = new Map<string, Uint8Array>()

export const ConversationAssets = HttpRouter.add(
  "GET",
  "/assets/:file",
  Effect.gen(function* () {
    const { file } = yield* HttpRouter.params
    const path = file === undefined ? undefined : assets[file]
    if (path === undefined || file === undefined) return envelope(404, "not_found", "Not found")
    const bytes = assetCache.get(file) ?? (yield* Effect.promise(() => readFile(path)))
    assetCache.set(file, bytes)
    return HttpServerResponse.uint8Array(bytes, {
      contentType: "text/javascript; charset=utf-8",
      headers: { "cache-control": "public, max-age=300" }
    })
  })
)

export const ConversationPageRoutes = Layer.mergeAll(ConversationPage, ConversationQueue, ConversationAssets)
