/** The inspector's page's style sheet (page.ts): a list of entities beside the chosen one's statechart. */
export const STYLE = `
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
#entities li { padding: 5px 12px; cursor: pointer; border-left: 3px solid transparent; }
#entities .line { display: flex; justify-content: space-between; gap: 8px; }
#entities .name { color: var(--muted); font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
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
