/**
 * The inspector's page: one HTML document, its style (page-style.ts) and script (page-script.ts) inline,
 * nothing fetched from anywhere but its own API, so it works with no internet. Beside the list of the
 * log's entities, the chosen one's statechart (the SVG of statecharts.ts, inlined so that CSS can light
 * `.current`), a scrubber over its timeline and the entry scrubbed to.
 */
import { createHash } from 'node:crypto';
import { SCRIPT } from './page-script.js';
import { STYLE } from './page-style.js';

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
    <input id="filter" type="search" placeholder="Filter by words, id, session or state" autocomplete="off" aria-label="filter">
    <div id="entities"></div>
  </aside>
  <section>
    <p id="empty">Choose a session, task, callback delivery, job, integration or pairing.</p>
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
        <dt>says</dt><dd id="entry-says"></dd>
      </dl>
    </div>
  </section>
</main>
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
