/**
 * The inspector's page: one HTML document, its style and script inline, nothing fetched from anywhere but
 * its own API, so it works with no internet. It lists the log's entities; shows the chosen one's
 * statechart (the SVG of statecharts.ts, inlined so that CSS can light `.current`) with a scrubber over
 * its timeline; and follows the log live over `/api/live`, read with fetch since EventSource cannot send
 * the token. The token comes from the URL's fragment (`#token=…`), which a browser never sends.
 *
 * Everything from the log (ids, states, event types) is written as text, never as markup.
 */
import { createHash } from 'node:crypto';

const STYLE = `
:root { color-scheme: light; --text: #1f2328; --muted: #59636e; --line: #d1d9e0; --panel: #f6f8fa; --accent: #0969da; --chosen: #ddf4ff; }
* { box-sizing: border-box; }
html, body { margin: 0; height: 100%; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; color: var(--text); background: #fff; display: flex; flex-direction: column; }
header { display: flex; align-items: center; gap: 16px; padding: 10px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
h1 { font-size: 15px; margin: 0; font-weight: 600; }
#log { color: var(--muted); flex: 1; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#status { color: var(--muted); font-size: 12px; }
label.live { display: flex; align-items: center; gap: 6px; cursor: pointer; user-select: none; }
#fault { padding: 8px 16px; background: #fff1e5; border-bottom: 1px solid #f5c396; color: #8a4600; }
main { flex: 1; display: grid; grid-template-columns: minmax(260px, 340px) 1fr; min-height: 0; }
aside { border-right: 1px solid var(--line); display: flex; flex-direction: column; min-height: 0; }
#filter { margin: 10px; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; font: inherit; }
#entities { overflow: auto; padding: 0 0 16px; }
#entities h2 { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 14px 12px 4px; font-weight: 600; }
#entities h2 span { font-weight: 400; }
#entities ul { list-style: none; margin: 0; padding: 0; }
#entities li { display: flex; justify-content: space-between; gap: 8px; padding: 5px 12px; cursor: pointer; border-left: 3px solid transparent; }
#entities li:hover { background: var(--panel); }
#entities li.chosen { background: var(--chosen); border-left-color: var(--accent); }
#entities .id { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.state { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; color: var(--muted); white-space: nowrap; }
.forgotten { opacity: .55; }
section { overflow: auto; padding: 16px 24px; min-width: 0; }
#empty { color: var(--muted); }
#title { font-size: 18px; margin: 0 0 2px; font-weight: 600; word-break: break-all; }
#subtitle { color: var(--muted); margin: 0 0 12px; }
#chart { border: 1px solid var(--line); border-radius: 8px; padding: 8px; overflow: auto; background: #fff; }
#chart svg { display: block; max-width: 100%; height: auto; margin: 0 auto; }
#scrub { display: flex; align-items: center; gap: 8px; margin: 14px 0 8px; }
#scrub input { flex: 1; accent-color: var(--accent); }
#scrub button { font: inherit; padding: 3px 10px; border: 1px solid var(--line); border-radius: 6px; background: var(--panel); cursor: pointer; }
#scrub button:disabled { opacity: .4; cursor: default; }
#count { color: var(--muted); font-size: 12px; min-width: 5em; text-align: right; }
#entry { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
#entry dt { color: var(--muted); }
#entry dd { margin: 0; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; word-break: break-all; }
`;

const BODY = `
<header>
  <h1>assistant-relay inspector</h1>
  <span id="log"></span>
  <span id="status"></span>
  <label class="live"><input type="checkbox" id="live" checked> live</label>
</header>
<div id="fault" hidden></div>
<main>
  <aside>
    <input id="filter" type="search" placeholder="Filter by id, session or state" autocomplete="off" aria-label="filter">
    <div id="entities"></div>
  </aside>
  <section>
    <p id="empty">Choose a session, task, callback delivery, job, integration, pairing or plugin job.</p>
    <div id="chosen" hidden>
      <h2 id="title"></h2>
      <p id="subtitle"></p>
      <div id="chart"></div>
      <div id="scrub">
        <button id="prev" type="button" aria-label="previous event">&#9664;</button>
        <input id="scrubber" type="range" min="0" max="0" value="0" aria-label="event">
        <button id="next" type="button" aria-label="next event">&#9654;</button>
        <span id="count"></span>
      </div>
      <dl id="entry">
        <dt>position</dt><dd id="entry-position"></dd>
        <dt>time</dt><dd id="entry-time"></dd>
        <dt>event</dt><dd id="entry-type"></dd>
        <dt>state</dt><dd id="entry-state"></dd>
      </dl>
    </div>
  </section>
</main>
`;

// Plain ES2020 for any current browser; no template literals, so that it sits in this one as it is.
const SCRIPT = `
"use strict";
var KINDS = [["session", "Sessions"], ["task", "Tasks"], ["delivery", "Callback deliveries"], ["job", "Reasoning jobs"], ["integration", "Integrations"], ["pairing", "Pairings"], ["plugin-job", "Plugin jobs"]];
var token = new URLSearchParams(location.hash.slice(1)).get("token");
var headers = token ? { authorization: "Bearer " + token } : {};
var view = { entities: [], end: -1, chosen: null, timeline: null, index: 0, pictures: new Map(), loading: false, again: false };
var $ = function (id) { return document.getElementById(id); };

function element(tag, className, text) {
  var node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

async function get(path, signal) {
  var response = await fetch(path, { headers: headers, signal: signal });
  if (!response.ok) {
    var body = await response.json().catch(function () { return null; });
    var error = new Error(body && body.error ? body.error.message : "HTTP " + response.status);
    error.status = response.status;
    throw error;
  }
  return response;
}

function say(text) { $("status").textContent = text; }

function nameOf(entity) {
  if (entity.kind === "task") return entity.session_id + " / " + entity.id;
  if (entity.kind === "delivery") return entity.session_id + " #" + entity.id;
  if (entity.kind === "job") return entity.integration_id + " / " + entity.id;
  return String(entity.id);
}

function stateOf(entry) {
  // The status only when the state does not say it already (a job's always does): "completed", not "completed (completed)", as replay prints it.
  var extra = [entry.status === entry.state || String(entry.state).endsWith("." + entry.status) ? undefined : entry.status, entry.cause].filter(Boolean);
  return entry.state + (extra.length ? " (" + extra.join(", ") + ")" : "");
}

function timeOf(at) { return new Date(at).toISOString().replace("T", " ").replace("Z", " UTC"); }

async function refresh() {
  if (view.loading) { view.again = true; return; }
  view.loading = true;
  try {
    do {
      view.again = false;
      await load();
    } while (view.again);
  } catch (error) {
    say(error.message);
  } finally {
    view.loading = false;
  }
}

async function load() {
  var list = await (await get("/api/entities")).json();
  view.entities = list.entities;
  view.end = list.end;
  $("log").textContent = (list.log ? list.log + " log " : "log ") + list.db + " \\u00b7 through event #" + list.end;
  $("fault").hidden = !list.fault;
  $("fault").textContent = list.fault ? "Stopped: " + list.fault : "";
  drawList();
  if (view.chosen !== null) await loadTimeline(false);
}

function drawList() {
  var query = $("filter").value.trim().toLowerCase();
  var root = $("entities");
  root.replaceChildren();
  KINDS.forEach(function (pair) {
    var shown = view.entities.filter(function (entity) {
      return entity.kind === pair[0] && (query === "" || (nameOf(entity) + " " + entity.state + " " + (entity.status || "")).toLowerCase().indexOf(query) >= 0);
    });
    if (shown.length === 0) return;
    var heading = element("h2", "", pair[1] + " ");
    heading.append(element("span", "", "(" + shown.length + ")"));
    var list = element("ul");
    shown.forEach(function (entity) {
      var item = element("li", entity.key === view.chosen ? "chosen" : "");
      item.dataset.key = entity.key;
      item.dataset.kind = entity.kind;
      item.title = entity.key;
      item.append(element("span", "id", nameOf(entity)), element("span", "state" + (entity.state === "forgotten" ? " forgotten" : ""), stateOf(entity)));
      item.addEventListener("click", function () { choose(entity.key); });
      list.append(item);
    });
    root.append(heading, list);
  });
}

async function picture(machine) {
  if (!view.pictures.has(machine)) view.pictures.set(machine, get("/api/statecharts/" + encodeURIComponent(machine) + ".svg").then(function (response) { return response.text(); }));
  return view.pictures.get(machine);
}

async function choose(key) {
  view.chosen = key;
  view.timeline = null;
  drawList();
  try {
    await loadTimeline(true);
  } catch (error) {
    say(error.message);
  }
}

async function loadTimeline(fresh) {
  var key = view.chosen;
  var timeline;
  try {
    timeline = await (await get("/api/entities/" + encodeURIComponent(key))).json();
  } catch (error) {
    if (error.status !== 404) throw error;
    view.chosen = null;
    $("chosen").hidden = true;
    $("empty").hidden = false;
    return;
  }
  if (key !== view.chosen) return;
  var atNewest = fresh || view.timeline === null || view.index >= view.timeline.entries.length - 1;
  if (fresh) {
    var svg = await picture(timeline.machine);
    if (key !== view.chosen) return;
    $("chart").innerHTML = svg;
    $("title").textContent = nameOf(timeline);
    $("subtitle").textContent = timeline.kind + (timeline.form ? " (Form " + timeline.form + ")" : "") + " \\u00b7 " + timeline.machine + " statechart \\u00b7 " + timeline.entries.length + " events";
    $("empty").hidden = true;
    $("chosen").hidden = false;
  } else {
    $("subtitle").textContent = $("subtitle").textContent.replace(/\\d+ events$/, timeline.entries.length + " events");
  }
  view.timeline = timeline;
  $("scrubber").max = String(timeline.entries.length - 1);
  show(atNewest ? timeline.entries.length - 1 : view.index);
}

// The state and its ancestors: open.delivered lights open too. (No machine of ours has parallel states.)
function light(state) {
  $("chart").querySelectorAll(".current").forEach(function (node) { node.classList.remove("current"); });
  var parts = state.split(".");
  for (var n = 1; n <= parts.length; n++) {
    var node = $("chart").querySelector('[data-state="' + CSS.escape(parts.slice(0, n).join(".")) + '"]');
    if (node) node.classList.add("current");
  }
}

function show(index) {
  var entries = view.timeline.entries;
  view.index = Math.max(0, Math.min(index, entries.length - 1));
  var entry = entries[view.index];
  $("scrubber").value = String(view.index);
  $("prev").disabled = view.index === 0;
  $("next").disabled = view.index === entries.length - 1;
  $("count").textContent = (view.index + 1) + " / " + entries.length;
  $("entry-position").textContent = "#" + entry.position;
  $("entry-time").textContent = timeOf(entry.at);
  $("entry-type").textContent = entry.type;
  $("entry-state").textContent = stateOf(entry);
  light(entry.state);
}

var following = null;

async function follow() {
  while ($("live").checked) {
    var controller = new AbortController();
    following = controller;
    try {
      var response = await get("/api/live", controller.signal);
      say("following the log");
      var reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      var buffer = "";
      for (;;) {
        var read = await reader.read();
        if (read.done) break;
        buffer += read.value.replace(/\\r\\n?/g, "\\n");
        var cut;
        while ((cut = buffer.indexOf("\\n\\n")) >= 0) {
          frame(buffer.slice(0, cut));
          buffer = buffer.slice(cut + 2);
        }
      }
    } catch (error) {
      if (controller.signal.aborted) return;
      say(error.message);
    }
    if (!$("live").checked) return;
    say("reconnecting\\u2026");
    await new Promise(function (resolve) { setTimeout(resolve, 1000); });
  }
}

function frame(text) {
  var data = text.split("\\n").filter(function (line) { return line.indexOf("data:") === 0; }).map(function (line) { return line.slice(5).trim(); }).join("\\n");
  if (data === "") return;
  if (JSON.parse(data).end !== view.end) refresh();
}

$("live").addEventListener("change", function () {
  if ($("live").checked) {
    refresh();
    follow();
  } else {
    if (following) following.abort();
    say("paused");
  }
});
$("filter").addEventListener("input", drawList);
$("scrubber").addEventListener("input", function () { show(Number($("scrubber").value)); });
$("prev").addEventListener("click", function () { show(view.index - 1); });
$("next").addEventListener("click", function () { show(view.index + 1); });
refresh().then(function () { if ($("live").checked) follow(); });
`;

/** The page's Content-Security-Policy: its own script only (by hash), its own API only, nothing from elsewhere. */
export const PAGE_CSP = [
  "default-src 'none'",
  `script-src 'sha256-${createHash('sha256').update(SCRIPT).digest('base64')}'`,
  // The statechart pictures carry a <style> of their own.
  "style-src 'unsafe-inline'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const INSPECTOR_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>assistant-relay inspector</title>
<style>${STYLE}</style>
</head>
<body>${BODY}<script>${SCRIPT}</script>
</body>
</html>
`;
