// toolgate web: the page's only script (no inline scripts: the CSP forbids
// them). Everything the model wrote is set as text, never as markup.
"use strict";

// The session's token, kept by the sign-in in this origin's storage: the
// cookie alone opens nothing (any server on 127.0.0.1 receives it).
const csrf = localStorage.getItem("toolgate-csrf") || "";
const $ = (sel, root = document) => root.querySelector(sel);
let state = { pending: [], recent: [] };

function left(expires) {
  const s = Math.round((new Date(expires) - Date.now()) / 1000);
  if (s <= 0) return "expiring";
  const m = Math.floor(s / 60);
  return "expires in " + (m > 0 ? m + "m" : "") + (s % 60) + "s";
}

function fill(node, item) {
  $(".tool", node).textContent = item.tool;
  $(".host", node).textContent = item.host ? "on " + item.host : "";
  $(".id", node).textContent = item.id;
  $(".input", node).textContent = (item.lines || []).join("\n");
}

async function decide(item, node, approve) {
  const err = $(".error", node);
  err.textContent = "";
  for (const b of node.querySelectorAll("button")) b.disabled = true;
  try {
    const resp = await fetch("/api/decide", {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Toolgate-CSRF": csrf },
      body: JSON.stringify({ id: item.id, decision: approve ? "approve" : "deny", reason: $(".reason", node).value }),
    });
    if (!resp.ok) throw new Error((await resp.text()).trim());
    node.classList.add("decided");
  } catch (e) {
    err.textContent = e.message;
    for (const b of node.querySelectorAll("button")) b.disabled = false;
  }
}

function render() {
  const list = $("#pending");
  const keep = new Map();
  for (const li of list.children) keep.set(li.dataset.id, li);
  const next = [];
  for (const item of state.pending) {
    let node = keep.get(item.id);
    if (!node) {
      node = $("#ask").content.firstElementChild.cloneNode(true);
      node.dataset.id = item.id;
      fill(node, item);
      $(".rule", node).textContent = item.rule ? "rule " + item.rule : "the policy's default";
      $(".session", node).textContent = item.session;
      $(".approve", node).addEventListener("click", () => decide(item, node, true));
      $(".deny", node).addEventListener("click", () => decide(item, node, false));
    }
    node.dataset.expires = item.expires_at;
    next.push(node);
  }
  list.replaceChildren(...next);
  $("#count").textContent = state.pending.length ? "(" + state.pending.length + ")" : "";
  $("#empty").hidden = state.pending.length > 0;
  const recent = $("#recent");
  recent.replaceChildren(...(state.recent || []).map((item) => {
    const node = $("#done").content.firstElementChild.cloneNode(true);
    node.dataset.id = item.id;
    fill(node, item);
    $(".outcome", node).textContent = item.decision ? (item.decision === "allow" ? "approved" : "denied") : item.status;
    $(".actor", node).textContent = item.actor ? "by " + item.actor : "";
    $(".when", node).textContent = item.decided_at ? new Date(item.decided_at).toLocaleString() : "";
    return node;
  }));
  tick();
}

function tick() {
  for (const li of $("#pending").children) $(".left", li).textContent = left(li.dataset.expires);
}

function connect() {
  const es = new EventSource("/api/events?csrf=" + encodeURIComponent(csrf));
  es.addEventListener("state", (ev) => {
    state = JSON.parse(ev.data);
    $("#source").textContent = state.source === "fleet" ? "fleet queue" : "this machine's queue";
    $("#status").textContent = "live";
    render();
  });
  es.onerror = () => { $("#status").textContent = "reconnecting…"; };
}

setInterval(tick, 1000);
if (csrf) {
  connect();
} else {
  $("#status").textContent = "not signed in here: start toolgate web again and type its new code";
}
