// The conversation page, live: the stock Action Cable client over the browser cookie subscribes to
// the conversation channel twice — its feed after the page's cursor (new turns, statuses, the
// queue) and its transcript (a reply's text as it streams, then the settled turn). The feed's input
// items carry no text: the page reads its queue from its own route to fill it in. No build step.
import { createConsumer } from "/assets/actioncable.esm.js"

const root = document.querySelector("#conversation")
const { workspaceId, conversationId, after } = root.dataset
const turns = document.querySelector("#turns")
const inputs = document.querySelector("#inputs")
const live = document.querySelector("#live")
const consumer = createConsumer("/agent_api/v1/cable")
const identity = { channel: "ConversationChannel", workspace_id: workspaceId, conversation_id: conversationId }

const element = (tag, className, text = "") => {
  const node = document.createElement(tag)
  if (className) node.className = className
  node.textContent = text
  return node
}

const meta = (parts) => {
  const node = element("div", "meta")
  for (const [className, text] of parts) node.append(element("span", className, text))
  return node
}

/** The turn's element, made (empty, in position order) when the page has not seen it yet. */
const turnElement = (turnId, position) => {
  const found = document.getElementById(`turn-${turnId}`)
  if (found) return found
  const node = element("li", "turn")
  node.id = `turn-${turnId}`
  node.dataset.status = "pending"
  node.append(
    meta([
      ["position", position === undefined ? "" : `#${position}`],
      ["who", ""],
      ["kind", ""],
      ["status", "pending"]
    ]),
    element("div", "prompt"),
    element("div", "reasoning"),
    element("div", "content")
  )
  turns.append(node)
  return node
}

const setText = (node, selector, text) => {
  node.querySelector(selector).textContent = text ?? ""
}

const setStatus = (node, status) => {
  node.dataset.status = status
  setText(node, ".status", status)
}

/** A settled turn, as its projection says. */
const renderTurn = (turn) => {
  const node = turnElement(turn.public_id, turn.position)
  setStatus(node, turn.status)
  setText(node, ".position", `#${turn.position}`)
  setText(node, ".who", turn.speaker?.display_name ?? turn.role)
  setText(node, ".kind", turn.kind)
  setText(node, ".prompt", turn.kind === "direct_reply" ? turn.prompt_text : "")
  setText(node, ".reasoning", "")
  setText(node, ".content", turn.content)
}

const inputElement = (inputId) => document.getElementById(`input-${inputId}`)

// The newest queue read wins: an older answer arriving late is dropped.
let queueReads = 0
let queueShown = 0

/** Fills the shown inputs' text and speaker from the page's queue route (same cookie, same rules). */
const readQueue = async () => {
  const read = ++queueReads
  const response = await fetch(`/conversations/${encodeURIComponent(conversationId)}/queue`, {
    credentials: "same-origin",
    headers: { accept: "application/json" }
  })
  if (!response.ok) return
  const { inputs: queue } = await response.json()
  if (read < queueShown) return
  queueShown = read
  for (const input of queue) {
    const node = inputElement(input.public_id)
    if (!node) continue
    setText(node, ".who", input.speaker?.display_name ?? "")
    setText(node, ".content", input.text)
  }
}

const refreshQueue = () => {
  readQueue().catch(() => {})
}

/** The feed's durable items: turns appear and change status, the queue follows its rows. */
const onFeedItem = ({ type, payload }) => {
  switch (type) {
    case "turn_created": {
      const node = turnElement(payload.turn_public_id, payload.position)
      setText(node, ".kind", payload.kind)
      setText(node, ".who", payload.role)
      return
    }
    case "turn_status":
      return setStatus(turnElement(payload.turn_public_id), payload.status)
    case "input_accepted": {
      if (inputElement(payload.input_public_id)) return
      const node = element("li", "input")
      node.id = `input-${payload.input_public_id}`
      node.dataset.state = payload.state
      node.append(
        meta([
          ["position", `#${payload.queue_position}`],
          ["who", ""],
          ["kind", payload.kind],
          ["state", payload.state]
        ]),
        element("div", "content")
      )
      inputs.append(node)
      refreshQueue()
      return
    }
    case "input_edited":
    case "input_blocked": {
      const node = inputElement(payload.input_public_id)
      const state = payload.state ?? "blocked"
      if (node) {
        node.dataset.state = state
        setText(node, ".state", state)
        if (type === "input_edited") refreshQueue()
      }
      return
    }
    case "input_materialized":
    case "input_deleted":
      inputElement(payload.input_public_id)?.remove()
      return
    case "conversation_ended":
      live.textContent = `ended (${payload.reason})`
      return
  }
}

/** The transcript: a reply's text streams into its turn; a dropped attempt starts it again. */
const onTranscriptItem = (item) => {
  switch (item.type) {
    case "text_delta":
    case "reasoning_delta": {
      const node = turnElement(item.turn_public_id)
      const part = node.querySelector(item.type === "text_delta" ? ".content" : ".reasoning")
      part.textContent += item.text
      return
    }
    case "stream_reset": {
      const node = turnElement(item.turn_public_id)
      setText(node, ".content", "")
      setText(node, ".reasoning", "")
      return
    }
    case "turn":
      return renderTurn(item.turn)
  }
}

consumer.subscriptions.create(
  { ...identity, after },
  {
    connected: () => {
      live.textContent = "live"
    },
    disconnected: () => {
      live.textContent = "offline"
    },
    rejected: () => {
      live.textContent = "unavailable"
    },
    received: ({ event }) => onFeedItem(event)
  }
)

consumer.subscriptions.create(
  { ...identity, items: "transcript" },
  {
    // The transcript follows a running reply from its first delta: what was shown of it goes.
    connected: () => {
      for (const node of turns.querySelectorAll('[data-status="running"]')) {
        setText(node, ".content", "")
        setText(node, ".reasoning", "")
      }
    },
    received: ({ event }) => onTranscriptItem(event)
  }
)
