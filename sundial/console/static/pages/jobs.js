// Jobs: filters, newest first, paging, and actions on the selected rows.
import { act, get, query } from "../api.js";
import { announce, h, replace, statusBadge, when } from "../dom.js";

const PAGE_SIZE = 50;
const STATUSES = ["pending", "queued", "running", "succeeded", "failed", "dead", "cancelled"];
const PRIORITIES = ["high", "medium", "low"];
const HEALTHS = ["failing", "dead"];
const ACTIONS = [["pause", "Pause selected"], ["resume", "Resume selected"], ["cancel", "Cancel selected"], ["retry", "Retry selected"]];

export async function render(root, params) {
  const filters = { status: params.status || "", priority: params.priority || "", health: params.health || "", name: params.name || "" };
  const state = { tokens: [null], page: 0, jobs: [], next: null, selected: new Set(), shown: "" };
  const body = h("tbody");
  const pageLabel = h("span", { class: "muted" });
  const previous = h("button", { type: "button", onclick: () => go(state.page - 1) }, "Previous page");
  const next = h("button", { type: "button", onclick: () => go(state.page + 1) }, "Next page");
  const all = h("input", { type: "checkbox", "aria-label": "Select all jobs on this page", onchange: () => selectAll(all.checked) });
  const buttons = ACTIONS.map(([action, label]) => h("button", { type: "button", disabled: true, onclick: () => bulk(action, label) }, label));

  async function load() {
    const answer = await get("/jobs" + query({ ...filters, limit: PAGE_SIZE, next_token: state.tokens[state.page] }));
    state.jobs = answer.jobs;
    state.next = answer.next_token;
    state.total = answer.total;
    state.estimate = answer.total_is_estimate;
    const shown = JSON.stringify(answer);
    if (shown !== state.shown) {
      state.shown = shown;
      draw();
    }
  }

  function draw() {
    const rows = state.jobs.map((job) => {
      const label = job.name || job.id;
      const box = h("input", { type: "checkbox", "aria-label": `Select ${label}`, checked: state.selected.has(job.id), onchange: () => {
        if (box.checked) state.selected.add(job.id); else state.selected.delete(job.id);
        sync();
      } });
      return h("tr", {},
        h("td", {}, box),
        h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}` }, label)),
        h("td", {}, statusBadge(job.status), job.paused ? " (paused)" : "", health(job)),
        h("td", {}, job.priority),
        h("td", {}, job.schedule || `once at ${when(job.run_at)}`),
        h("td", {}, when(job.next_run_at)),
        h("td", {}, when(job.created_at)));
    });
    replace(body, rows.length ? rows : h("tr", {}, h("td", { colspan: 7 }, "No jobs match.")));
    previous.disabled = state.page === 0;
    next.disabled = !state.next;
    const pages = Math.max(1, Math.ceil(state.total / PAGE_SIZE));
    const about = state.estimate ? "about " : "";
    pageLabel.textContent = `Page ${state.page + 1} of ${about}${pages}, ${state.jobs.length} of ${about}${state.total} jobs`;
    sync();
    // When the first screen of jobs is on the page, for anyone measuring it (bench/console_page.py).
    if (!performance.getEntriesByName("sundial:jobs-shown").length) performance.mark("sundial:jobs-shown");
  }

  function sync() {
    const onPage = state.jobs.filter((job) => state.selected.has(job.id)).length;
    all.checked = onPage > 0 && onPage === state.jobs.length;
    for (const button of buttons) button.disabled = state.selected.size === 0;
  }

  function selectAll(on) {
    for (const job of state.jobs) if (on) state.selected.add(job.id); else state.selected.delete(job.id);
    draw();
  }

  async function go(page) {
    if (page > state.page) state.tokens[page] = state.next;
    state.page = page;
    state.shown = "";
    await load();
  }

  async function bulk(action, label) {
    const ids = [...state.selected];
    for (const button of buttons) button.disabled = true;
    const results = await Promise.allSettled(ids.map((id) => act(id, action)));
    const refused = results.map((r, i) => [r, ids[i]]).filter(([r]) => r.status === "rejected");
    state.selected = new Set(refused.map(([, id]) => id));
    const done = ids.length - refused.length;
    const verb = label.replace(" selected", "").toLowerCase();
    const why = refused.length ? `; ${refused.length} refused: ${refused[0][0].reason.message}` : "";
    announce(`${verb}: ${done} of ${ids.length} jobs done${why}`, refused.length > 0);
    state.shown = "";
    await load();
  }

  function applyFilters(event) {
    event.preventDefault();
    location.hash = "#/jobs" + query(filters);
  }

  const filterForm = h("form", { class: "toolbar", role: "search", "aria-label": "Filter jobs", onsubmit: applyFilters },
    choice("Status", "status", STATUSES, filters),
    choice("Priority", "priority", PRIORITIES, filters),
    choice("Health", "health", HEALTHS, filters),
    h("div", {}, h("label", { for: "f-name" }, "Name"),
      h("input", { id: "f-name", type: "search", value: filters.name, oninput: (e) => { filters.name = e.target.value; } })),
    h("button", { type: "submit", class: "primary" }, "Apply filters"));

  replace(root,
    h("h1", {}, "Jobs"),
    filterForm,
    h("div", { class: "toolbar", role: "group", "aria-label": "Actions on selected jobs" }, buttons),
    h("table", {},
      h("caption", {}, "Jobs, newest first"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, all), ["Name", "Status", "Priority", "Schedule", "Next run", "Created"].map((t) => h("th", { scope: "col" }, t)))),
      body),
    h("div", { class: "pager" }, previous, next, pageLabel));
  try {
    await load();
  } catch (error) {
    replace(body, h("tr", {}, h("td", { colspan: 7, role: "alert" }, `The jobs could not be listed: ${error.message}`)));
  }
  return { refresh: load };
}

// A recurring job's status is its next occurrence's; its health says how the last ones ended.
function health(job) {
  if (job.health === "ok") return "";
  const streak = job.consecutive_failures > 1 ? `, ${job.consecutive_failures} in a row` : "";
  return h("span", { class: "muted" }, ` (${job.health}${streak})`);
}

function choice(label, name, values, filters) {
  const id = `f-${name}`;
  return h("div", {}, h("label", { for: id }, label),
    h("select", { id, onchange: (e) => { filters[name] = e.target.value; } },
      h("option", { value: "", selected: !filters[name] }, "any"),
      values.map((v) => h("option", { value: v, selected: filters[name] === v }, v))));
}
