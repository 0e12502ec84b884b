/**
 * The inspector's page's script (page.ts): it lists the log's entities, each by its words when it has any;
 * shows the chosen one's statechart with its state lit and a scrubber over its timeline; and follows the
 * log live over `/api/live`, read with fetch since EventSource cannot send the token. The token comes
 * from the URL's fragment (`#token=…`), which a browser never sends.
 *
 * Everything from the log (ids, states, words) is written as text, never as markup.
 */

// Plain ES2020 for any current browser; no template literals, so that it sits in this one as it is.
export const SCRIPT = `
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
      var text = [nameOf(entity), entity.says || "", entity.state_text].join(" ").toLowerCase();
      return entity.kind === pair[0] && (query === "" || text.indexOf(query) >= 0);
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
      // Known by its words when it has any (a task by its message), with its ids beneath.
      var line = element("div", "line");
      var state = element("span", "state" + (entity.state === "forgotten" ? " forgotten" : ""), entity.state_text);
      line.append(element("span", "id", entity.says || nameOf(entity)), state);
      item.append(line);
      if (entity.says) item.append(element("div", "name", nameOf(entity)));
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
  $("entry-state").textContent = entry.state_text;
  $("entry-says").textContent = entry.says || "";
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
