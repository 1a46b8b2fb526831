// The avatar-sim console: a watcher of a served simulator, built only on its /_sim and /v1 routes.
//
// Rules this file keeps (the browser tests hold it to them):
// - The admin token lives in the closure below and nowhere else: no cookie, no Web Storage, never
//   in the address. Reloading the page forgets it.
// - Nothing from the server becomes markup: every value is put in the page as text (text nodes,
//   textContent), never through innerHTML. The page's CSP also forbids inline script and style and
//   requires Trusted Types, so an HTML sink would throw rather than parse.
// - The page polls (every POLL_MS) rather than holding a stream: each request moves the served
//   clock to "now" first, so what the page shows is the simulator as of that instant.
"use strict";

(() => {
  const POLL_MS = 1000;
  const SESSIONS_SHOWN = 25;
  const REQUESTS_SHOWN = 50;
  const DELIVERIES_SHOWN = 20; // per organization, the newest
  const SVG = "http://www.w3.org/2000/svg";
  const LIVE = new Set(["starting", "running", "ending"]);

  let token = null; // the admin token: page memory only
  let served = null; // GET /_sim/served: the time factor, the key handle's length
  let timer = null;
  let generation = 0; // bumped on every login and logout, so a stale poll draws nothing
  let filter = { key: "", status: "" };

  const $ = (id) => document.getElementById(id);

  // -- building the DOM as text ---------------------------------------------------------------

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "class") node.className = value;
      else if (name === "dataset") Object.assign(node.dataset, value);
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : String(child)); // a string becomes a text node
    }
    return node;
  }

  function sessionLink(id) {
    return el("a", { href: "#session/" + encodeURIComponent(id), class: "session-link" }, id);
  }

  function text(value) {
    if (value === null || value === undefined) return "";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  function shortTime(stamp) {
    // "2026-03-02T10:11:12.345Z" → "10:11:12.345" (the date is in the clock panel)
    const at = text(stamp);
    const tee = at.indexOf("T");
    return tee < 0 ? at : at.slice(tee + 1).replace("Z", "");
  }

  // -- talking to the server ------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, body) {
      const error = body && body.error ? body.error : null;
      super(error ? `${status} ${error.code}: ${error.message}` : `HTTP ${status}`);
      this.status = status;
    }
  }

  async function api(method, path, body) {
    const headers = { Authorization: "Bearer " + token };
    const init = { method, headers, cache: "no-store", credentials: "omit", redirect: "error" };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    let data = null;
    try {
      data = await response.json();
    } catch (_) {
      data = null;
    }
    if (!response.ok) throw new ApiError(response.status, data);
    return data;
  }

  const query = (params) => {
    const search = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) if (value) search.set(name, value);
    const written = search.toString();
    return written ? "?" + written : "";
  };

  // -- login and logout -----------------------------------------------------------------------

  async function login(event) {
    event.preventDefault();
    const input = $("token");
    const candidate = input.value.trim();
    input.value = "";
    if (!candidate) return;
    token = candidate;
    const mine = ++generation;
    try {
      served = await api("GET", "/_sim/served");
    } catch (error) {
      if (mine !== generation) return;
      token = null;
      served = null;
      const said = error instanceof ApiError && error.status === 401
        ? "The server refused this token: nothing is shown without the admin token."
        : "Could not reach the simulator: " + error.message;
      showLoginError(said);
      return;
    }
    if (mine !== generation) return;
    $("login-error").hidden = true;
    $("login").hidden = true;
    $("console").hidden = false;
    $("forget").hidden = false;
    poll(mine);
  }

  function showLoginError(message) {
    const box = $("login-error");
    box.textContent = message;
    box.hidden = false;
  }

  function logout(message) {
    generation++;
    token = null;
    served = null;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    for (const id of ["organizations", "history", "deliveries", "active-faults", "pool-chart"]) {
      $(id).replaceChildren();
    }
    $("requests").tBodies[0].replaceChildren();
    $("console").hidden = true;
    $("forget").hidden = true;
    $("login").hidden = false;
    setConnection("not connected", "");
    if (message) showLoginError(message);
  }

  function setConnection(message, state) {
    const node = $("connection");
    node.textContent = message;
    node.dataset.state = state;
  }

  // -- the refresh loop -----------------------------------------------------------------------

  async function poll(mine) {
    if (mine !== generation) return;
    try {
      await refresh(mine);
      if (mine === generation) setConnection("live", "live");
    } catch (error) {
      if (mine !== generation) return;
      if (error instanceof ApiError && error.status === 401) {
        logout("The server no longer accepts this token.");
        return;
      }
      setConnection("reconnecting: " + error.message, "error");
    }
    if (mine === generation) timer = setTimeout(() => poll(mine), POLL_MS);
  }

  async function refresh(mine) {
    const requestsQuery = query({
      key_id: filter.key,
      status: filter.status,
      limit: String(REQUESTS_SHOWN),
    });
    const [clock, orgs, pool, faults, requests] = await Promise.all([
      api("GET", "/_sim/clock"),
      api("GET", "/_sim/organizations"),
      api("GET", "/_sim/pool"),
      api("GET", "/_sim/faults"),
      api("GET", "/_sim/requests" + requestsQuery).catch((error) => error),
    ]);
    const perOrg = await Promise.all(
      orgs.data.map((org) =>
        Promise.all([
          api("GET", "/_sim/sessions" + query({ org_id: org.id, limit: String(SESSIONS_SHOWN) })),
          api("GET", "/_sim/webhooks/deliveries" + query({ org_id: org.id })),
        ]),
      ),
    );
    const selected = selectedSession();
    let history = null;
    if (selected) {
      history = await Promise.all([
        api("GET", "/_sim/sessions/" + encodeURIComponent(selected)),
        api("GET", "/_sim/sessions/" + encodeURIComponent(selected) + "/events"),
      ]).catch((error) => error);
    }
    if (mine !== generation) return;
    drawClock(clock);
    drawFaults(faults, pool);
    drawPool(pool);
    drawSessions(orgs.data, perOrg.map(([sessions]) => sessions));
    drawHistory(selected, history);
    drawRequests(requests);
    drawDeliveries(orgs.data, perOrg.map(([, deliveries]) => deliveries));
  }

  // -- panels ---------------------------------------------------------------------------------

  function drawClock(clock) {
    $("clock-now").textContent = text(clock.now);
    const factor = served.time_factor;
    $("clock-factor").textContent = factor === null
      ? `manual clock: it moves only when advanced (${clock.seconds.toFixed(1)} s since the epoch)`
      : `time factor ${factor}: ${(1 / factor).toPrecision(3)} simulated seconds per wall second`;
  }

  function drawFaults(faults, pool) {
    const items = faults.data.map((fault) => {
      const name = text(fault.fault);
      const item = el("li", { class: "fault-item", dataset: { fault: name } }, el("strong", {}, name));
      const details = Object.entries(fault)
        .filter(([key]) => key !== "fault")
        .map(([key, value]) => `${key} ${text(value)}`);
      item.append(" ", details.join(", "));
      const clear = clearing(name, pool);
      if (clear) {
        const button = el("button", { type: "button", class: "clear", dataset: { fault: name } }, "Clear");
        button.addEventListener("click", () => act(clear.path, clear.body, `${name} cleared`));
        item.append(" ", button);
      } else {
        item.append(" ", el("span", { class: "note" }, name === "heartbeat_loss"
          ? "(ends by itself at its time)"
          : "(each worker returns after its restart)"));
      }
      return item;
    });
    if (items.length === 0) items.push(el("li", { class: "note" }, "none"));
    $("active-faults").replaceChildren(...items);
  }

  function clearing(name, pool) {
    if (name === "capacity") {
      return { path: "/_sim/faults/capacity", body: { workers: pool.configured_workers } };
    }
    if (name === "slow_startup") return { path: "/_sim/faults/slow_startup", body: { extra_seconds: 0 } };
    if (name === "purge_failure") return { path: "/_sim/faults/purge_failure", body: { enabled: false } };
    return null;
  }

  function drawPool(pool) {
    $("pool-now").textContent =
      `now: ${pool.busy} busy, ${pool.idle} idle, ${pool.restarting} restarting, ` +
      `${pool.queued} queued; ${pool.workers} workers of capacity ${pool.capacity} ` +
      `(configured ${pool.configured_workers})` +
      (pool.sample_every_seconds ? `; sampled every ${pool.sample_every_seconds} simulated s` : "");
    $("pool-chart").replaceChildren(chart(pool.samples));
  }

  function chart(samples) {
    const width = 900;
    const height = 180;
    const pad = 30;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "workers busy, idle, restarting and jobs queued against time");
    if (samples.length === 0) return svg;
    const first = samples[0].seconds;
    const last = Math.max(samples[samples.length - 1].seconds, first + 1);
    const top = Math.max(1, ...samples.map((s) => Math.max(s.workers, s.busy + s.idle, s.queued)));
    const x = (seconds) => pad + ((seconds - first) / (last - first)) * (width - 2 * pad);
    const y = (value) => height - pad - (value / top) * (height - 2 * pad);
    const axis = document.createElementNS(SVG, "path");
    axis.setAttribute("d", `M${pad} ${pad} V${height - pad} H${width - pad}`);
    axis.setAttribute("class", "axis");
    svg.append(axis);
    for (const [label, at] of [[String(top), pad], ["0", height - pad]]) {
      const tick = document.createElementNS(SVG, "text");
      tick.setAttribute("x", "4");
      tick.setAttribute("y", String(at + 4));
      tick.textContent = label;
      svg.append(tick);
    }
    for (const [label, at] of [[shortTime(samples[0].at), pad], [shortTime(samples[samples.length - 1].at), width - pad - 90]]) {
      const tick = document.createElementNS(SVG, "text");
      tick.setAttribute("x", String(at));
      tick.setAttribute("y", String(height - 8));
      tick.textContent = label;
      svg.append(tick);
    }
    for (const series of ["busy", "idle", "restarting", "queued"]) {
      const line = document.createElementNS(SVG, "polyline");
      line.setAttribute("class", "series " + series);
      line.setAttribute("points", samples.map((s) => `${x(s.seconds).toFixed(1)},${y(s[series]).toFixed(1)}`).join(" "));
      svg.append(line);
    }
    return svg;
  }

  function drawSessions(orgs, lists) {
    const blocks = orgs.map((org, index) => {
      const list = lists[index];
      const counts = Object.entries(list.counts).map(([status, n]) =>
        el("span", { class: "count status-" + status }, `${status} ${n}`));
      const rows = list.data.map((session) => {
        const crash = LIVE.has(session.status)
          ? el("button", { type: "button", class: "crash", dataset: { session: session.id } }, "Crash worker")
          : null;
        if (crash) {
          crash.addEventListener("click", () =>
            act("/_sim/faults/worker_crash", { session_id: session.id }, `worker of ${session.id} crashed`));
        }
        return el("tr", { dataset: { session: session.id, status: session.status } },
          el("td", {}, sessionLink(session.id)),
          el("td", { class: "status status-" + session.status }, session.status),
          el("td", {}, session.error ? session.error.code : ""),
          el("td", { class: "num" }, session.usage.billable_seconds),
          el("td", {}, shortTime(session.created_at)),
          el("td", {}, session.avatar_id),
          el("td", { class: "room" }, session.transport ? text(session.transport.room_name) : ""),
          el("td", { class: "metadata" }, text(session.metadata)),
          el("td", {}, crash));
      });
      const table = el("table", { class: "table sessions" },
        el("thead", {}, el("tr", {}, ...["session", "status", "error", "billable s", "created", "avatar", "room", "metadata", ""].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows));
      const shown = list.total > list.data.length ? ` (newest ${list.data.length} of ${list.total})` : "";
      return el("div", { class: "org", dataset: { org: org.id } },
        el("h3", {}, el("span", { class: "org-name" }, org.name), ` · ${org.plan} · ${org.id}${shown}`),
        el("p", { class: "counts" }, ...(counts.length ? counts : ["no sessions yet"])),
        list.data.length ? table : null);
    });
    $("organizations").replaceChildren(...blocks);
  }

  function selectedSession() {
    const match = /^#session\/(.+)$/.exec(window.location.hash);
    return match ? decodeURIComponent(match[1]) : null;
  }

  function drawHistory(selected, history) {
    const box = $("history");
    $("history-hint").hidden = Boolean(selected);
    if (!selected) {
      box.replaceChildren();
      return;
    }
    if (history instanceof Error) {
      box.replaceChildren(el("p", { class: "error" }, `${selected}: ${history.message}`));
      return;
    }
    const [session, events] = history;
    const rows = events.data.map((event) => {
      const fields = Object.entries(event.data).map(([key, value]) => `${key}: ${text(value)}`);
      return el("tr", { dataset: { type: event.type } },
        el("td", {}, shortTime(event.created_at)),
        el("td", {}, event.type),
        el("td", { class: "status status-" + text(event.status) }, text(event.status)),
        el("td", { class: "reason" }, fields.join(", ")));
    });
    box.replaceChildren(
      el("p", { id: "history-summary" },
        el("strong", {}, session.id), ` · ${session.status} · ${session.usage.billable_seconds} billable s so far · org ${session.org_id}`,
        session.error ? ` · error ${session.error.code}` : ""),
      el("table", { class: "table" },
        el("thead", {}, el("tr", {}, ...["at", "event", "status", "reason, code and fields"].map((h) => el("th", {}, h)))),
        el("tbody", {}, ...rows)));
  }

  function drawRequests(requests) {
    const error = $("requests-error");
    const body = $("requests").tBodies[0];
    if (requests instanceof Error) {
      error.textContent = requests.message;
      error.hidden = false;
      body.replaceChildren();
      return;
    }
    error.hidden = true;
    body.replaceChildren(...requests.data.map((call) => {
      const key = call.key_id
        ? el("button", { type: "button", class: "key-filter", title: "show only this key" }, call.key_id)
        : "";
      if (call.key_id) {
        key.addEventListener("click", () => {
          $("filter-key").value = call.key_id;
          applyFilter();
        });
      }
      const touched = call.resource_id && call.resource_id.startsWith("sess_")
        ? sessionLink(call.resource_id)
        : text(call.resource_id);
      return el("tr", { dataset: { status: call.status } },
        el("td", {}, shortTime(call.at)),
        el("td", { class: "request-id" }, call.request_id),
        el("td", {}, `${call.method} ${call.path}`),
        el("td", { class: "num status-code" }, call.status),
        el("td", {}, text(call.code)),
        el("td", {}, key),
        el("td", {}, touched));
    }));
  }

  function drawDeliveries(orgs, lists) {
    const blocks = [];
    orgs.forEach((org, index) => {
      const deliveries = lists[index].data;
      if (deliveries.length === 0) return;
      const rows = [];
      for (const delivery of deliveries.slice(-DELIVERIES_SHOWN).reverse()) {
        rows.push(el("tr", { class: "delivery" },
          el("td", {}, shortTime(delivery.created_at)),
          el("td", {}, delivery.event_type),
          el("td", {}, delivery.url),
          el("td", {}, delivery.status),
          el("td", { class: "num" }, delivery.attempts.length)));
        for (const attempt of delivery.attempts) {
          rows.push(el("tr", { class: "attempt" },
            el("td", {}, shortTime(attempt.scheduled_at)),
            el("td", {}, `attempt ${attempt.attempt}`),
            el("td", {}, text(attempt.outcome)),
            el("td", {}, text(attempt.status)),
            el("td", {}, "")));
        }
      }
      const shown = deliveries.length > DELIVERIES_SHOWN
        ? ` (newest ${DELIVERIES_SHOWN} of ${deliveries.length})`
        : "";
      blocks.push(el("div", { class: "org" },
        el("h3", {}, el("span", { class: "org-name" }, org.name), ` · ${org.id}${shown}`),
        el("table", { class: "table" },
          el("thead", {}, el("tr", {}, ...["at", "event / attempt", "url / answer", "status", "attempts"].map((h) => el("th", {}, h)))),
          el("tbody", {}, ...rows))));
    });
    if (blocks.length === 0) blocks.push(el("p", { class: "note" }, "No webhook deliveries yet (register an endpoint with POST /_sim/webhooks)."));
    $("deliveries").replaceChildren(...blocks);
  }

  // -- controls -------------------------------------------------------------------------------

  async function act(path, body, done) {
    const out = $("fault-result");
    try {
      await api("POST", path, body);
      out.textContent = done;
      out.dataset.state = "ok";
    } catch (error) {
      out.textContent = error.message;
      out.dataset.state = "error";
    }
    kick();
  }

  function kick() {
    // Redraw now rather than at the next tick, so a control's effect shows at once.
    if (token === null) return;
    if (timer !== null) clearTimeout(timer);
    timer = null;
    poll(generation);
  }

  async function advance(event) {
    event.preventDefault();
    const out = $("advance-result");
    const seconds = Number($("advance-seconds").value);
    try {
      const clock = await api("POST", "/_sim/clock/advance", { seconds });
      out.textContent = `advanced ${seconds} s to ${clock.now}`;
      out.dataset.state = "ok";
    } catch (error) {
      out.textContent = error.message;
      out.dataset.state = "error";
    }
    kick();
  }

  function injectFault(event) {
    event.preventDefault();
    const form = event.currentTarget;
    const fault = form.dataset.fault;
    const body = {};
    for (const input of form.querySelectorAll("input")) {
      if (input.value === "") continue;
      if (input.name === "enabled") body.enabled = input.value === "true";
      else if (input.type === "number") body[input.name] = Number(input.value);
      else body[input.name] = input.value.trim();
    }
    act("/_sim/faults/" + fault, body, `${fault} injected`);
  }

  function applyFilter(event) {
    if (event) event.preventDefault();
    const key = $("filter-key").value.trim();
    // Only the key's handle leaves the page: a whole key pasted here is cut to it first.
    filter = {
      key: served ? key.slice(0, served.key_id_length) : "",
      status: $("filter-status").value.trim(),
    };
    kick();
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("login-form").addEventListener("submit", login);
    $("forget").addEventListener("click", () => logout(""));
    $("advance-form").addEventListener("submit", advance);
    for (const form of document.querySelectorAll("form.fault")) form.addEventListener("submit", injectFault);
    $("requests-filter").addEventListener("submit", applyFilter);
    $("filter-clear").addEventListener("click", () => {
      $("filter-key").value = "";
      $("filter-status").value = "";
      applyFilter();
    });
    window.addEventListener("hashchange", kick);
    $("token").focus();
  });
})();
