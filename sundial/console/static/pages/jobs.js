// Jobs: filters, newest first, paged with the page in the address, and actions on the selected rows
// or on every job the filters match.
import { act, get, query } from "../api.js";
import { confirmAction } from "../dialog.js";
import { announce, h, replace, scroller, statusBadge, when } from "../dom.js";
import { ACTIONS, labelOf, readable, refusal } from "../lifecycle.js";
import { minuteNow } from "../times.js";
import { actOnMatches, actionFilter, countOf, matchingQuestion } from "./matching.js";
import { pageTokens, walkTo } from "./paging.js";

const PAGE_SIZE = 50;
const STATUSES = ["pending", "queued", "running", "succeeded", "failed", "dead", "cancelled"];
const PRIORITIES = ["high", "medium", "low"];
const HEALTHS = ["failing", "dead"];
const BULK = ["pause", "resume", "cancel", "retry"];
const COLUMNS = 7;
// A job id as the API issues it (a ULID), in either case: Crockford base 32 ignores it.
const JOB_ID = /^[0-9A-HJKMNP-TV-Z]{26}$/i;

export async function render(root, params) {
  // What the list shows, and what the filter form holds until it is applied.
  const filters = { status: params.status || "", priority: params.priority || "", health: params.health || "", name: params.name || "", name_prefix: params.name_prefix || "" };
  const draft = { ...filters };
  const tokens = pageTokens(filters);
  const state = { page: Math.max(0, (parseInt(params.page, 10) || 1) - 1), jobs: [], next: null, selected: new Map(), refused: new Map(), shown: "", asked: 0, everyMatch: false, matchShown: "" };
  const body = h("tbody");
  const list = h("table", {}, h("caption", {}, "Jobs, newest first"));
  const pageLabel = h("p", { class: "muted", role: "status", "aria-label": "Paging" });
  const previous = h("button", { type: "button", disabled: true, onclick: () => go(state.page - 1) }, "Previous page");
  const next = h("button", { type: "button", disabled: true, onclick: () => go(state.page + 1) }, "Next page");
  const all = h("input", { type: "checkbox", "aria-label": "Select all jobs on this page", onchange: () => selectAll(all.checked) });
  // Gmail's way: once the page's rows are all selected, every match across pages can be chosen.
  const matchBar = h("div", { class: "toolbar" });
  const progress = h("div");
  const buttons = BULK.map((action) => h("button", { type: "button", disabled: true, class: action === "cancel" ? "danger" : null, onclick: () => bulk(action) }, `${ACTIONS[action][0]} selected`));

  // Loading is shown as loading, never as an empty page, and paging waits for it.
  function loading() {
    list.setAttribute("aria-busy", "true");
    previous.disabled = next.disabled = true;
    pageLabel.textContent = "Loading jobs…";
    replace(body, h("tr", {}, h("td", { colspan: COLUMNS }, "Loading jobs…")));
  }

  async function load() {
    const mine = ++state.asked;
    const page = await walkTo(tokens, state.page, (token) => get("/jobs" + query({ ...filters, limit: PAGE_SIZE, next_token: token })));
    if (mine !== state.asked) return;
    state.page = page.index;
    state.jobs = page.answer.jobs;
    state.next = page.answer.next_token;
    state.total = page.answer.total;
    state.estimate = page.answer.total_is_estimate;
    list.removeAttribute("aria-busy");
    const shown = JSON.stringify([page.answer, minuteNow()]);
    if (shown !== state.shown) {
      state.shown = shown;
      draw();
    }
  }

  function draw() {
    for (const job of state.jobs) if (state.selected.has(job.id)) state.selected.set(job.id, job);
    const rows = state.jobs.map((job) => {
      const label = labelOf(job, state.jobs);
      const box = h("input", { type: "checkbox", "aria-label": `Select ${label}`, checked: state.selected.has(job.id), onchange: () => {
        if (box.checked) state.selected.set(job.id, job); else state.selected.delete(job.id);
        sync();
      } });
      const refused = state.refused.get(job.id);
      return h("tr", { class: refused ? "refused" : null },
        h("td", { class: "select" }, box),
        h("td", {}, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}` }, label)),
        h("td", {}, statusBadge(job.status), job.paused ? " (paused)" : "", health(job), missed(job), refused ? h("p", { class: "error" }, refused) : null),
        h("td", {}, job.priority),
        h("td", {}, job.schedule || `once at ${when(job.run_at, job.timezone)}`),
        h("td", {}, when(job.next_run_at, job.timezone)),
        h("td", {}, when(job.created_at, job.timezone)));
    });
    replace(body, rows.length ? rows : h("tr", {}, h("td", { colspan: COLUMNS }, "No jobs match.")));
    previous.disabled = state.page === 0;
    next.disabled = !state.next;
    pageLabel.textContent = pageText(state);
    sync();
    // When the first screen of jobs is on the page, for anyone measuring it (bench/console_page.py).
    if (!performance.getEntriesByName("sundial:jobs-shown").length) performance.mark("sundial:jobs-shown");
  }

  function sync() {
    const onPage = state.jobs.filter((job) => state.selected.has(job.id)).length;
    all.checked = onPage > 0 && onPage === state.jobs.length;
    if (!all.checked) state.everyMatch = false;
    syncMatchBar(onPage);
    const chosen = [...state.selected.values()];
    if (state.everyMatch) {
      // The server decides each job as it reaches it; what it refuses is counted and listed.
      for (const button of buttons) { button.disabled = false; button.title = ""; }
      return;
    }
    BULK.forEach((action, i) => {
      const fits = chosen.some((job) => !refusal(job, action));
      buttons[i].disabled = !fits;
      buttons[i].title = chosen.length && !fits ? `None of the selected jobs can be ${ACTIONS[action][2]}: ${refusal(chosen[0], action)}` : "";
    });
  }

  function syncMatchBar(onPage) {
    const more = Boolean(state.next) || state.page > 0;
    const count = countOf(state.total, state.estimate);
    const filter = actionFilter(filters);
    const shown = JSON.stringify([state.everyMatch, all.checked && more, count, onPage, Boolean(filter)]);
    if (shown === state.matchShown) return;  // a refresh leaves the control under the pointer alone
    state.matchShown = shown;
    if (state.everyMatch) {
      replace(matchBar, h("p", {}, `All ${count} matching jobs are selected.`),
        h("button", { type: "button", onclick: () => selectAll(false) }, "Clear selection"));
    } else if (all.checked && more && filter) {
      replace(matchBar, h("p", {}, `All ${onPage} jobs on this page are selected.`),
        h("button", { type: "button", onclick: () => { state.everyMatch = true; sync(); } }, `Select all ${count} matching jobs`));
    } else if (all.checked && more) {
      replace(matchBar, h("p", { class: "muted" }, `All ${onPage} jobs on this page are selected. To act on every match across pages, filter by "Name starts with": a name the jobs contain is not a filter the server can act on.`));
    } else {
      replace(matchBar);
    }
  }

  function selectAll(on) {
    for (const job of state.jobs) if (on) state.selected.set(job.id, job); else state.selected.delete(job.id);
    draw();
  }

  async function go(page) {
    state.page = page;
    state.everyMatch = false;
    history.pushState(null, "", "#/jobs" + query({ ...filters, page: page > 0 ? page + 1 : "" }));
    loading();
    state.shown = "";
    await load();
  }

  async function bulkOnMatches(action) {
    const [label] = ACTIONS[action];
    const sure = await confirmAction(matchingQuestion(action, countOf(state.total, state.estimate)));
    if (!sure) return;
    for (const button of buttons) button.disabled = true;
    state.everyMatch = false;
    state.selected.clear();
    state.refused = new Map();
    try {
      const operation = await actOnMatches(action, actionFilter(filters), progress);
      announce(`${label}: ${operation.done} matching jobs done, ${operation.refused} refused.`, operation.refused > 0);
    } catch (error) {
      announce(`${label} refused: ${error.message}`, true);
    }
    state.shown = "";
    await load();
  }

  async function bulk(action) {
    if (state.everyMatch) return bulkOnMatches(action);
    const [label] = ACTIONS[action];
    const chosen = [...state.selected.values()];
    const fits = chosen.filter((job) => !refusal(job, action));
    const left = chosen.filter((job) => refusal(job, action));
    const sure = await confirmAction(question(action, fits.length, left.length));
    if (!sure) return;
    for (const button of buttons) button.disabled = true;
    state.refused = new Map(left.map((job) => [job.id, `${label} refused: ${refusal(job, action)}`]));
    const results = await Promise.allSettled(fits.map((job) => act(job.id, action)));
    results.forEach((result, i) => {
      const job = fits[i];
      if (result.status === "rejected") state.refused.set(job.id, `${label} refused: ${readable(result.reason.message, job, labelOf(job, state.jobs))}`);
    });
    state.selected = new Map(chosen.filter((job) => state.refused.has(job.id)).map((job) => [job.id, job]));
    const done = fits.length - (state.refused.size - left.length);
    const why = state.refused.size ? `; ${state.refused.size} refused, each marked in the list with why` : "";
    announce(`${label}: ${done} of ${chosen.length} selected jobs done${why}.`, state.refused.size > 0);
    state.shown = "";
    await load();
  }

  function applyFilters(event) {
    event.preventDefault();
    const typed = draft.name.trim();
    if (JOB_ID.test(typed)) {
      location.hash = `#/jobs/${typed.toUpperCase()}`;
      return;
    }
    location.hash = "#/jobs" + query(draft);
  }

  const filterForm = h("form", { class: "toolbar", role: "search", "aria-label": "Filter jobs", onsubmit: applyFilters },
    choice("Status", "status", STATUSES, draft),
    choice("Priority", "priority", PRIORITIES, draft),
    choice("Health", "health", HEALTHS, draft),
    h("div", {}, h("label", { for: "f-name" }, "Name or job id"),
      h("input", { id: "f-name", type: "search", value: draft.name, oninput: (e) => { draft.name = e.target.value; } })),
    h("div", {}, h("label", { for: "f-prefix" }, "Name starts with"),
      h("input", { id: "f-prefix", type: "search", value: draft.name_prefix, oninput: (e) => { draft.name_prefix = e.target.value; } })),
    h("button", { type: "submit", class: "primary" }, "Apply filters"));

  list.append(h("thead", {}, h("tr", {}, h("th", { scope: "col", class: "select" }, all),
    ["Name", "Status", "Priority", "Schedule", "Next run", "Created"].map((t) => h("th", { scope: "col" }, t)))), body);
  replace(root, h("h1", {}, "Jobs"), filterForm,
    h("div", { class: "toolbar", role: "group", "aria-label": "Actions on selected jobs" }, buttons), matchBar, progress,
    scroller(list), h("div", { class: "pager" }, previous, next, pageLabel));
  loading();
  try {
    await load();
  } catch (error) {
    list.removeAttribute("aria-busy");
    pageLabel.textContent = "";
    replace(body, h("tr", {}, h("td", { colspan: COLUMNS, role: "alert" }, `The jobs could not be listed: ${error.message}`)));
  }
  return { refresh: load };
}

// "Page 3 of 120, 50 of 6,000 jobs", with "about" where the API's total is an estimate.
function pageText(state) {
  const about = state.estimate ? "about " : "";
  const total = state.total ?? 0;
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE), state.page + 1);
  return `Page ${state.page + 1} of ${about}${pages.toLocaleString("en")}, ${state.jobs.length} of ${about}${total.toLocaleString("en")} jobs`;
}

// "Cancel 3 jobs?", with what cannot be undone and what is left out of the selection.
function question(action, count, left) {
  const [label, verb, past] = ACTIONS[action];
  const jobs = (n) => `${n} job${n === 1 ? "" : "s"}`;
  const detail = [
    action === "cancel" ? "This cannot be undone." : `Each is ${past} now.`,
    left ? `${jobs(left)} of the selection cannot be ${past} and ${left === 1 ? "is" : "are"} left out.` : "",
  ];
  return { question: `${label} ${jobs(count)}?`, detail: detail.join(" ").trim(), yes: `Yes, ${verb} ${jobs(count)}`, no: "Go back" };
}

// A recurring job's status is its next occurrence's; its health says how the last ones ended.
function health(job) {
  if (job.health === "ok") return "";
  const streak = job.consecutive_failures > 1 ? `, ${job.consecutive_failures} in a row` : "";
  return h("span", { class: "muted" }, ` (${job.health}${streak})`);
}

// Instants its misfire or overlap policy skipped since it was created: the job page lists them. In
// the status cell, as the health is, so that the table keeps its columns.
function missed(job) {
  if (!(job.missed > 0)) return "";
  return h("span", { class: "missed-count", title: "Instants of its schedule skipped by its misfire or overlap policy; the job's page lists them" },
    ` (${job.missed.toLocaleString("en")} missed)`);
}

function choice(label, name, values, filters) {
  const id = `f-${name}`;
  return h("div", {}, h("label", { for: id }, label),
    h("select", { id, onchange: (e) => { filters[name] = e.target.value; } },
      h("option", { value: "", selected: !filters[name] }, "any"),
      values.map((v) => h("option", { value: v, selected: filters[name] === v }, v))));
}
