// The state visualizer. Reads the admin API with the browser session (safe reads), restarts
// through the page's own CSRF-protected routes, draws statecharts with Mermaid and follows the
// selected actor live over the cable (ActorChannel). No build step, no external assets.
import { createConsumer } from "/inspector/actioncable.esm.js"

const csrf = document.querySelector('meta[name="csrf-token"]').content
const $ = (selector) => document.querySelector(selector)
const escapeHtml = (value) =>
  String(value).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c])

const state = { machines: [], selected: null, subscription: null, lastSeq: 0 }
const consumer = createConsumer("/agent_api/v1/cable")

const api = async (path) => {
  const response = await fetch(path, { credentials: "same-origin", headers: { accept: "application/json" } })
  const body = await response.json()
  if (!response.ok) throw new Error(body.error?.message ?? response.statusText)
  return body
}

const act = async (path) => {
  const response = await fetch(path, { method: "POST", credentials: "same-origin", headers: { "x-csrf-token": csrf } })
  const body = await response.json().catch(() => ({}))
  if (!response.ok) throw new Error(body.error?.message ?? response.statusText)
  return body
}

const showError = (error) => {
  $("#message").innerHTML = `<p class="error">${escapeHtml(error.message ?? error)}</p>`
}

/** A kind's name may break between its words (deviceAuthorization → device·Authorization) in a narrow panel. */
const breakable = (kind) => escapeHtml(kind).replace(/([a-z])([A-Z])/g, "$1<wbr>$2")

const renderSupervisors = (supervisors) => {
  $("#supervisors").innerHTML = `<table class="supervisors"><thead><tr><th>Kind</th><th class="num">Actors</th>
    <th class="num">Active</th><th class="num">Live</th><th class="num">Quarantined</th><th class="num">Restarts</th>
    <th></th></tr></thead><tbody>${supervisors
      .map(
        (s) => `<tr><td>${breakable(s.kind)}</td><td class="num">${s.actors}</td><td class="num">${s.active_actors}</td>
        <td class="num">${s.live_actors}</td><td class="num">${s.quarantined_actors}</td><td class="num">${s.restarts}</td>
        <td><button class="small" data-restart-kind="${escapeHtml(s.kind)}">Restart</button></td></tr>`
      )
      .join("")}</tbody></table>`
}

const renderFilters = () => {
  const kinds = state.machines
    .map((m) => `<option value="${escapeHtml(m.kind)}">${escapeHtml(m.kind)}</option>`)
    .join("")
  $("#kind").innerHTML = `<option value="">all kinds</option>${kinds}`
  updateStates()
}

const updateStates = () => {
  const machine = state.machines.find((m) => m.kind === $("#kind").value)
  const states = machine ? machine.states : [...new Set(state.machines.flatMap((m) => m.states))]
  $("#state").innerHTML = `<option value="">any state</option>${states
    .map((s) => `<option value="${escapeHtml(s)}">${escapeHtml(s)}</option>`)
    .join("")}`
}

const loadActors = async () => {
  const query = new URLSearchParams({ limit: "100" })
  if ($("#kind").value) query.set("kind", $("#kind").value)
  if ($("#state").value) query.set("state", $("#state").value)
  if ($("#stuck").checked) query.set("stuck", "true")
  if ($("#quarantined").checked) query.set("quarantined", "true")
  const { actors } = await api(`/api/v1/admin/actors?${query}`)
  $("#actors").innerHTML = actors.length
    ? `<table><thead><tr><th>Kind</th><th>Actor</th><th>State</th></tr></thead><tbody>${actors
        .map(
          (a) => `<tr class="actor${state.selected?.id === a.id ? " selected" : ""}" data-kind="${escapeHtml(a.kind)}"
            data-id="${escapeHtml(a.id)}"><td>${escapeHtml(a.kind)}</td><td><code>${escapeHtml(a.id)}</code></td>
            <td>${escapeHtml(a.state)}${a.stuck ? '<span class="flag stuck">stuck</span>' : ""}${
              a.quarantined_at ? '<span class="flag quarantined">quarantined</span>' : ""
            }</td></tr>`
        )
        .join("")}</tbody></table>`
    : `<p class="empty">No actors match.</p>`
}

const mermaidId = (path) => path.split(".").join("__")

const drawDiagram = async (actor) => {
  const machine = state.machines.find((m) => m.kind === actor.kind)
  if (!machine || !window.mermaid) return
  const current = actor.state.split(",").map((value) => mermaidId(value))
  const text = `${machine.mermaid}\n  classDef current fill:#ffd54f,stroke:#e65100,stroke-width:2px\n${current
    .map((id) => `  class ${id} current`)
    .join("\n")}`
  const { svg } = await window.mermaid.render(`diagram-${Date.now()}`, text)
  $("#diagram").innerHTML = svg
}

const renderActor = async (actor) => {
  state.lastSeq = actor.seq
  $("#detail").innerHTML = `
    <h2>${escapeHtml(actor.kind)} <code>${escapeHtml(actor.id)}</code></h2>
    <p>State <span class="state" id="actor-state">${escapeHtml(actor.state)}</span>
      <span id="actor-status">${escapeHtml(actor.status)}</span> · seq <span id="actor-seq">${actor.seq}</span>
      ${actor.stuck ? '<span class="flag stuck">stuck</span>' : ""}
      ${actor.quarantined_at ? '<span class="flag quarantined">quarantined</span>' : ""}
      <span id="live" class="live off">not live</span>
      <button id="restart-actor">Restart actor</button></p>
    <div id="diagram"></div>
    <h3>Context</h3><pre id="context">${escapeHtml(JSON.stringify(actor.context, null, 2))}</pre>
    <h3>Timers</h3>${
      actor.timers.length
        ? `<table><tr><th>Timer</th><th>Event</th><th>Due</th></tr>${actor.timers
            .map(
              (t) =>
                `<tr><td>${escapeHtml(t.id)}</td><td>${escapeHtml(t.event.type)}</td><td>${escapeHtml(t.due_at)}</td></tr>`
            )
            .join("")}</table>`
        : `<p class="empty">None.</p>`
    }
    <h3>Jobs</h3>${
      actor.jobs.length
        ? `<table><tr><th>Job</th><th>State</th><th>Attempts</th><th>Last error</th></tr>${actor.jobs
            .map(
              (j) => `<tr><td>${escapeHtml(j.name)}</td><td>${escapeHtml(j.state)}</td><td>${j.attempts}</td>
                <td>${escapeHtml(j.last_error ?? "")}</td></tr>`
            )
            .join("")}</table>`
        : `<p class="empty">None.</p>`
    }
    <h3>Pending messages</h3>${
      actor.pending_messages.length
        ? `<table id="pending-messages"><tr><th>Event</th><th>From</th><th>Attempts</th><th>Waiting</th><th>Told</th></tr>${actor.pending_messages
            .map(
              (
                m
              ) => `<tr><td>${escapeHtml(m.event.type)}</td><td>${escapeHtml(m.from ? `${m.from.kind} ${m.from.id}` : "—")}</td>
                <td>${m.attempts}</td><td>${escapeHtml(m.waiting ?? "")}</td><td>${escapeHtml(m.created_at)}</td></tr>`
            )
            .join("")}</table>`
        : `<p class="empty">None.</p>`
    }
    <h3>Journal</h3><table id="journal"><tr><th>Seq</th><th>Event</th><th>From → to</th><th>When</th></tr>${actor.journal
      .map(
        (
          e
        ) => `<tr><td>${e.seq}</td><td>${escapeHtml(e.event.type)}</td><td>${escapeHtml(e.from ?? "—")} → ${escapeHtml(e.to)}</td>
          <td>${escapeHtml(e.at)}</td></tr>`
      )
      .join("")}</table>
    ${
      actor.dead_letters.length
        ? `<h3>Dead letters</h3><table>${actor.dead_letters
            .map(
              (d) =>
                `<tr><td>${escapeHtml(d.event.type)}</td><td>${escapeHtml(d.error)}</td><td>${escapeHtml(d.at)}</td></tr>`
            )
            .join("")}</table>`
        : ""
    }`
  await drawDiagram(actor)
}

const select = async (kind, id) => {
  state.selected = { kind, id }
  history.replaceState(null, "", `/inspector?kind=${encodeURIComponent(kind)}&id=${encodeURIComponent(id)}`)
  state.subscription?.unsubscribe()
  const { actor } = await api(`/api/v1/admin/actors/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`)
  await renderActor(actor)
  state.subscription = consumer.subscriptions.create(
    { channel: "ActorChannel", kind, id, after: actor.seq },
    {
      connected: () => $("#live")?.classList.remove("off") ?? undefined,
      disconnected: () => $("#live")?.classList.add("off"),
      received: async () => {
        const fresh = await api(`/api/v1/admin/actors/${encodeURIComponent(kind)}/${encodeURIComponent(id)}`)
        if (state.selected?.id === id) {
          await renderActor(fresh.actor)
          $("#live").classList.remove("off")
          $("#live").textContent = "live"
          await refresh()
        }
      }
    }
  )
  const live = $("#live")
  if (live) live.textContent = "live"
  await loadActors()
}

const refresh = async () => {
  const { supervisors } = await api("/api/v1/admin/supervisors")
  renderSupervisors(supervisors)
  await loadActors()
}

document.addEventListener("click", async (event) => {
  const target = event.target
  try {
    const row = target.closest?.("tr.actor")
    if (row) return await select(row.dataset.kind, row.dataset.id)
    if (target.dataset?.restartKind) {
      await act(`/inspector/supervisors/${encodeURIComponent(target.dataset.restartKind)}/restart`)
      return await refresh()
    }
    if (target.id === "restart-actor" && state.selected) {
      const { kind, id } = state.selected
      await act(`/inspector/actors/${encodeURIComponent(kind)}/${encodeURIComponent(id)}/restart`)
      return await select(kind, id)
    }
  } catch (error) {
    showError(error)
  }
})

for (const id of ["#kind", "#state", "#stuck", "#quarantined"]) {
  document.querySelector(id).addEventListener("change", () => {
    if (id === "#kind") updateStates()
    loadActors().catch(showError)
  })
}

const start = async () => {
  window.mermaid?.initialize({ startOnLoad: false, securityLevel: "strict" })
  state.machines = (await api("/api/v1/admin/machines")).machines
  renderFilters()
  const params = new URLSearchParams(location.search)
  if (params.get("kind")) $("#kind").value = params.get("kind")
  updateStates()
  await refresh()
  if (params.get("kind") && params.get("id")) await select(params.get("kind"), params.get("id"))
}

start().catch(showError)
