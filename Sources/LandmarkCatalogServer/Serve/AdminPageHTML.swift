/// The operator's page (docs/serve.md §12): one HTML document, its styles and script inline.
///
/// No framework and no build step. The script reads `/api/summary` (and `/api/users/ID` on `/users/ID`) and draws the
/// charts as SVG; every value goes in as text (`textContent`), never as markup.
let adminPageHTML = #"""
    <!doctype html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>catalog serve</title>
    <style>
    body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f5f7; }
    header { background: #1d2330; color: #fff; padding: 10px 20px; display: flex; gap: 24px; align-items: baseline; }
    header h1 { font-size: 18px; margin: 0; }
    main { padding: 16px 20px; display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; }
    section, figure { background: #fff; border-radius: 6px; padding: 12px 16px; margin: 0; box-shadow: 0 1px 2px #0002; }
    h2 { font-size: 15px; margin: 0 0 8px; }
    figcaption { font-weight: 600; margin-bottom: 6px; }
    .big { font-size: 22px; font-weight: 600; }
    .ok { color: #17803d; } .bad { color: #c0262d; }
    table { border-collapse: collapse; width: 100%; }
    td, th { text-align: left; padding: 3px 6px; border-bottom: 1px solid #eee; vertical-align: top; }
    svg { width: 100%; height: 120px; display: block; }
    .muted { color: #667; font-size: 12px; }
    input { font: inherit; padding: 4px 6px; }
    ul { margin: 4px 0; padding-left: 20px; }
    </style>
    </head>
    <body>
    <header><h1>catalog serve</h1><span id="node"></span><span id="version"></span><span id="ready"></span><span id="updated" class="muted"></span></header>
    <main>
    <section id="gauges"><h2>Now</h2>
    <table>
    <tr><th>Requests, last hour</th><td class="big" id="requests-hour">–</td></tr>
    <tr><th>Requests since start</th><td id="requests-total">–</td></tr>
    <tr><th>Active users (5 min / 1 h)</th><td><span id="active-5m">–</span> / <span id="active-1h">–</span></td></tr>
    <tr><th>401s since start, by cause</th><td id="refusals">–</td></tr>
    <tr><th>Long-polls open / cap</th><td><span id="long-polls">–</span> / <span id="long-polls-limit">–</span></td></tr>
    <tr><th>Position rows</th><td id="positions">–</td></tr>
    <tr><th>Quarantined rows</th><td id="quarantined">–</td></tr>
    <tr><th>Database (file + WAL)</th><td id="database-bytes">–</td></tr>
    <tr><th>Up since</th><td id="started">–</td></tr>
    <tr><th>Hub</th><td id="hub">–</td></tr>
    </table></section>
    <figure id="chart-requests"><figcaption>Requests per 10 s, last hour: <span id="requests-hour-caption">–</span> (5xx: <span id="errors-hour">–</span>, 401: <span id="unauthorized-hour">–</span>)</figcaption><svg id="svg-requests" viewBox="0 0 360 100" preserveAspectRatio="none"></svg></figure>
    <figure id="chart-latency"><figcaption>Latency (ms, long-poll waits left out): mean, last hour <span id="latency-mean">–</span>, largest <span id="latency-max">–</span></figcaption><svg id="svg-latency" viewBox="0 0 360 100" preserveAspectRatio="none"></svg></figure>
    <figure id="chart-polls"><figcaption>Long-polls open, most in the hour: <span id="polls-max">–</span></figcaption><svg id="svg-polls" viewBox="0 0 360 100" preserveAspectRatio="none"></svg></figure>
    <section id="sources"><h2>Sources</h2><table id="sources-table"><tr><th>source</th><th>last success</th><th>last status</th></tr></table><p id="sources-none" class="muted"></p></section>
    <section id="user"><h2>A user</h2>
    <form id="user-form"><input id="user-input" placeholder="user id" autocomplete="off"> <button>Look up</button></form>
    <div id="user-result"></div></section>
    </main>
    <script>
    "use strict";
    const $ = (id) => document.getElementById(id);
    const set = (id, v) => { $(id).textContent = String(v); };
    function el(tag, text, cls) { const e = document.createElement(tag); if (text !== undefined) e.textContent = String(text); if (cls) e.className = cls; return e; }
    function bytes(n) { if (n >= 1 << 30) return (n / (1 << 30)).toFixed(1) + " GiB"; if (n >= 1 << 20) return (n / (1 << 20)).toFixed(1) + " MiB"; if (n >= 1024) return (n / 1024).toFixed(1) + " KiB"; return n + " B"; }
    function draw(svgId, series, colors, bars) {
      const svg = $(svgId); while (svg.firstChild) svg.removeChild(svg.firstChild);
      let top = 1; for (const s of series) for (const v of s) top = Math.max(top, v);
      series.forEach((s, k) => {
        if (bars && k === 0) {
          s.forEach((v, i) => {
            if (v <= 0) return;
            const r = document.createElementNS("http://www.w3.org/2000/svg", "rect");
            const h = v * 96 / top;
            r.setAttribute("x", (i * 360 / s.length).toFixed(1)); r.setAttribute("width", Math.max(1, 360 / s.length).toFixed(1));
            r.setAttribute("y", (98 - h).toFixed(1)); r.setAttribute("height", h.toFixed(1)); r.setAttribute("fill", colors[k]);
            svg.appendChild(r);
          });
          return;
        }
        const p = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
        p.setAttribute("points", s.map((v, i) => (i * 360 / Math.max(1, s.length - 1)).toFixed(1) + "," + (98 - v * 96 / top).toFixed(1)).join(" "));
        p.setAttribute("fill", "none"); p.setAttribute("stroke", colors[k]); p.setAttribute("stroke-width", "1.5"); p.setAttribute("vector-effect", "non-scaling-stroke");
        svg.appendChild(p);
      });
      const t = document.createElementNS("http://www.w3.org/2000/svg", "text");
      t.setAttribute("x", "2"); t.setAttribute("y", "10"); t.setAttribute("font-size", "9"); t.setAttribute("fill", "#667"); t.textContent = "max " + top;
      svg.appendChild(t);
    }
    async function summary() {
      const r = await fetch("/api/summary", { cache: "no-store" });
      const s = await r.json();
      set("node", "node " + s.node); set("version", "v" + s.version);
      const ready = $("ready"); ready.textContent = s.ready ? "ready" : "not ready: " + s.notReady; ready.className = s.ready ? "ok" : "bad";
      set("updated", "updated " + new Date(s.now * 1000).toISOString());
      const h = s.history, col = (i) => h.map((b) => b[i]);
      const requests = col(1), errors = col(2), unauthorized = col(3), mean = col(4), max = col(5), polls = col(6);
      const sum = (a) => a.reduce((x, y) => x + y, 0);
      const hour = sum(requests);
      set("requests-hour", hour); set("requests-hour-caption", hour); set("errors-hour", sum(errors)); set("unauthorized-hour", sum(unauthorized));
      set("requests-total", s.requestsTotal);
      const causes = Object.entries(s.refusals || {}).filter(([, n]) => n > 0).map(([c, n]) => c + " " + n);
      set("refusals", causes.length ? causes.join(", ") : "none");
      set("active-5m", s.activeUsers["5m"]); set("active-1h", s.activeUsers["1h"]);
      set("long-polls", s.longPolls); set("long-polls-limit", s.longPollsLimit);
      set("positions", s.positions ?? "?"); set("quarantined", s.quarantined ?? "?");
      set("database-bytes", s.databaseBytes ? bytes(s.databaseBytes.main + s.databaseBytes.wal) : "?");
      set("started", new Date(s.startedAt * 1000).toISOString());
      set("hub", s.hub === null ? "none (this database alone)" : s.hub);
      let weighted = 0, timed = 0; h.forEach((b) => { if (b[4] > 0) { weighted += b[4] * b[1]; timed += b[1]; } });
      set("latency-mean", timed ? (weighted / timed).toFixed(2) + " ms" : "–"); set("latency-max", Math.max(0, ...max).toFixed(2) + " ms");
      set("polls-max", Math.max(0, ...polls));
      draw("svg-requests", [requests, errors], ["#2d6cdf", "#c0262d"], true);
      draw("svg-latency", [mean, max], ["#17803d", "#e08a00"]);
      draw("svg-polls", [polls], ["#7a3ccf"]);
      const table = $("sources-table"); while (table.rows.length > 1) table.deleteRow(1);
      (s.sources || []).forEach((src) => {
        const tr = table.insertRow();
        tr.appendChild(el("td", (src.remote ? src.remote + " " : "") + src.source));
        tr.appendChild(el("td", src.lastSuccess || "never"));
        tr.appendChild(el("td", src.lastStatus === null ? "–" : src.lastStatus, src.lastStatus === 0 ? "ok" : "bad"));
      });
      set("sources-none", (s.sources || []).length ? "" : "no sources: this database syncs from none");
    }
    async function lookUp(id) {
      const out = $("user-result"); while (out.firstChild) out.removeChild(out.firstChild);
      const r = await fetch("/api/users/" + encodeURIComponent(id), { cache: "no-store" });
      const u = await r.json();
      if (!r.ok) { out.appendChild(el("p", u.error, "bad")); return; }
      const t = el("table"); out.appendChild(t);
      const row = (k, v, id) => { const tr = t.insertRow(); tr.appendChild(el("th", k)); const td = el("td", v); if (id) td.id = id; tr.appendChild(td); };
      row("user", u.user, "user-id");
      if (u.row) {
        row("page", u.row.page, "user-page"); row("landmark", u.row.landmarkId ?? "–");
        row("stamp", u.row.updatedAt + " · counter " + u.row.counter, "user-stamp"); row("node", u.row.node, "user-node");
        row("deleted", u.row.deleted ? "yes (tombstone)" : "no"); row("change seq", u.row.seq);
      } else row("row", "none", "user-page");
      row("last pull", u.lastPull ? u.lastPull.at + " · HTTP " + u.lastPull.status + (u.lastPull.longPoll ? " (long-poll)" : "") + " · " + (u.lastPull.agent || "no User-Agent") : "none since start", "user-last-pull");
      row("last push", u.lastPush ? u.lastPush.at + " · " + (u.lastPush.outcome || "HTTP " + u.lastPush.status) + " · " + (u.lastPush.edge ? "edge node" : (u.lastPush.agent || "no User-Agent")) : "none since start", "user-last-push");
      row("quarantined", u.quarantinedCount, "user-quarantined");
      out.appendChild(el("h2", "Why the row is what it is"));
      const ul = el("ul"); ul.id = "user-why"; u.why.forEach((w) => ul.appendChild(el("li", w))); out.appendChild(ul);
      if (u.quarantined.length) {
        out.appendChild(el("h2", "Quarantined rows (newest first)"));
        const q = el("table"); q.id = "user-quarantine"; out.appendChild(q);
        const head = q.insertRow(); ["row", "stamped", "node", "source", "reason"].forEach((h) => head.appendChild(el("th", h)));
        u.quarantined.forEach((x) => { const tr = q.insertRow(); [x.id, x.updatedAt, x.node, x.source, x.reason].forEach((v) => tr.appendChild(el("td", v))); });
      }
    }
    $("user-form").addEventListener("submit", (e) => { e.preventDefault(); const id = $("user-input").value.trim(); if (id) { history.pushState(null, "", "/users/" + encodeURIComponent(id)); lookUp(id); } });
    const m = location.pathname.match(/^\/users\/(.+)$/);
    if (m) {
      let id = m[1];
      try { id = decodeURIComponent(m[1]); } catch (e) { /* a malformed %-escape: looked up as written */ }
      $("user-input").value = id; lookUp(id).catch((e) => set("user-result", String(e)));
    }
    summary().catch((e) => set("updated", "cannot read /api/summary: " + e));
    setInterval(() => summary().catch(() => {}), 10000);
    </script>
    </body>
    </html>
    """#
