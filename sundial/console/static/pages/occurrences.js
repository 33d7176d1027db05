// Occurrences: every instant of a job's schedule in a range and what became of it (GET
// /jobs/{id}/occurrences), as a timeline of marks and a table; and the job's missed instants.
// Each state has a colour, a glyph and words, so that no mark says anything by colour alone.
import { get, query } from "../api.js";
import { h, replace, table, when } from "../dom.js";
import { absolute, minuteNow } from "../times.js";

const PAGE_SIZE = 100;
const HOUR = 3600 * 1000;
export const SPANS = [["1 hour", HOUR], ["6 hours", 6 * HOUR], ["24 hours", 24 * HOUR], ["7 days", 7 * 24 * HOUR]];
const DEFAULT_SPAN = 24 * HOUR;
const GLYPHS = { ran: "●", running: "◐", waiting: "○", skipped: "✕" };
// Skipped for a reason the user did not choose: counted in the job's `missed`.
const MISSED = new Set(["misfire", "overlap"]);

const iso = (ms) => new Date(ms).toISOString();

// The occurrences of `jobId` as a card; `refresh(job)` reads them again (the job page calls it at
// each of its refreshes) and never throws: a failed read is shown in place of the occurrences.
export function occurrencesCard(jobId) {
  const path = `/jobs/${encodeURIComponent(jobId)}/occurrences`;
  // `end` null: the range ends now and follows it. `tokens[k]` lists page k of the range.
  const state = { span: DEFAULT_SPAN, end: null, page: 0, tokens: [null], job: null, asked: 0, shown: "" };
  const spanChoice = h("select", { id: "occ-span", onchange: () => move(state.end, Number(spanChoice.value)) },
    SPANS.map(([label, ms]) => h("option", { value: ms, selected: ms === DEFAULT_SPAN }, label)));
  const earlier = h("button", { type: "button", onclick: () => move(range().from, state.span) }, "Earlier");
  const later = h("button", { type: "button", onclick: () => move(range().to + state.span, state.span) }, "Later");
  const latest = h("button", { type: "button", onclick: () => move(null, state.span) }, "Now");
  const previousPage = h("button", { type: "button", onclick: () => turn(-1) }, "Previous page of occurrences");
  const nextPage = h("button", { type: "button", onclick: () => turn(1) }, "Next page of occurrences");
  const pager = h("div", { class: "pager", role: "group", "aria-label": "Pages of the range", hidden: true }, previousPage, nextPage);
  const heading = h("p", { class: "muted", id: "occ-range" });
  const body = h("div", { "aria-live": "polite" });
  const node = h("section", { class: "card", "aria-labelledby": "h-occurrences", hidden: true },
    h("h2", { id: "h-occurrences" }, "Occurrences"),
    h("div", { class: "toolbar", role: "group", "aria-label": "Occurrence range" },
      h("span", {}, h("label", { for: "occ-span" }, "Range"), spanChoice), earlier, later, latest),
    heading, body, pager);

  // The range shown: [to - span, to), to being now while it follows now. A range that ends now
  // starts no earlier than the job's creation: the instants before it were never owed (a backfill
  // aside, which Earlier shows).
  function range() {
    const to = state.end ?? Date.now();
    let from = to - state.span;
    const created = state.job ? Date.parse(state.job.created_at) : NaN;
    if (state.end === null && created > from && created < to) from = created;
    return { from, to };
  }

  function move(end, span) {
    state.span = span;
    state.end = end === null || end >= Date.now() ? null : end;
    state.page = 0;
    state.tokens = [null];
    load();
  }

  function turn(step) {
    // A page past the first keeps the range where it is, so that its token stays the range's.
    if (state.end === null) state.end = range().to;
    state.page = Math.max(0, state.page + step);
    load();
  }

  async function load() {
    const mine = ++state.asked;
    const { from, to } = range();
    const zone = state.job ? state.job.timezone : undefined;
    heading.textContent = `From ${when(iso(from), zone)} to ${state.end === null ? "now" : when(iso(to), zone)}`;
    later.disabled = state.end === null;
    latest.disabled = state.end === null;
    body.setAttribute("aria-busy", "true");
    let answer;
    try {
      answer = await get(path + query({ from: iso(from), to: iso(to), limit: PAGE_SIZE, next_token: state.tokens[state.page] }));
    } catch (error) {
      if (mine !== state.asked) return;
      body.removeAttribute("aria-busy");
      state.shown = "";
      pager.hidden = true;
      return replace(body, h("p", { role: "alert" }, `The occurrences could not be read: ${error.message}`));
    }
    if (mine !== state.asked) return;
    body.removeAttribute("aria-busy");
    if (answer.next_token) state.tokens[state.page + 1] = answer.next_token;
    previousPage.disabled = state.page === 0;
    nextPage.disabled = !answer.next_token;
    pager.hidden = state.page === 0 && !answer.next_token;
    // A range that ends now is drawn again when its rows change, and once a minute for its axis.
    const shown = JSON.stringify([answer, state.end === null ? minuteNow() : [from, to], state.page, zone]);
    if (shown === state.shown) return;
    state.shown = shown;
    // The axis spans the page: the whole range when the page holds all of it.
    const axis = {
      from: state.page === 0 || !answer.occurrences.length ? from : Date.parse(answer.occurrences[0].scheduled_at),
      to: answer.next_token && answer.occurrences.length ? Date.parse(answer.occurrences[answer.occurrences.length - 1].scheduled_at) + 1 : to,
    };
    draw(answer.occurrences, axis, zone, Boolean(answer.next_token));
  }

  function draw(rows, axis, zone, more) {
    if (!rows.length) {
      return replace(body, h("p", { class: "muted" }, state.page ? "No more occurrences in this range." : "No instant of the schedule falls in this range."));
    }
    const page = state.page ? `page ${state.page + 1}: ` : "";
    const label = `${page}${rows.length} occurrence${rows.length === 1 ? "" : "s"} from ${absolute(rows[0].scheduled_at, zone)}${more ? ", more on the next page" : ""}`;
    replace(body,
      h("p", { role: "status", "aria-label": "Occurrence counts" }, `${label}. ${counts(rows)}`),
      timeline(rows, axis, zone),
      legend(),
      table("Occurrences, oldest first", columns(rows), rows.map((row) => cells(row, zone, moved(rows)))));
  }

  return {
    node,
    async refresh(job) {
      state.job = job;
      node.hidden = false;
      // A range that ends now moves with it; a range paged back stays where it is, its rows read again.
      await load();
    },
  };
}

// "3 ran, 1 waiting, 4 skipped (3 paused, 1 misfire)".
function counts(rows) {
  const byState = new Map();
  const byReason = new Map();
  for (const row of rows) {
    byState.set(row.state, (byState.get(row.state) || 0) + 1);
    if (row.state === "skipped" && row.reason) byReason.set(row.reason, (byReason.get(row.reason) || 0) + 1);
  }
  return Object.keys(GLYPHS).filter((s) => byState.has(s)).map((s) => {
    const reasons = s === "skipped" && byReason.size ? ` (${[...byReason].map(([r, n]) => `${n} ${r}`).join(", ")})` : "";
    return `${byState.get(s)} ${s}${reasons}`;
  }).join(", ");
}

function describe(row) {
  if (row.state === "skipped") return `skipped: ${row.reason || "no reason given"}`;
  if (row.state === "waiting" && row.reason) return `waiting (${row.reason})`;
  return row.state;
}

function flags(row) {
  return [row.extra ? "extra (triggered)" : null, row.backfilled ? "backfilled" : null].filter(Boolean).join(", ");
}

// One mark per instant along the range, each a list item named by its instant and what became of
// it; the glyph and the words carry the state, the colour only repeats it.
function timeline(rows, axis, zone) {
  const length = Math.max(1, axis.to - axis.from);
  const marks = rows.map((row) => {
    const at = Date.parse(row.scheduled_at);
    const left = Math.min(100, Math.max(0, ((at - axis.from) / length) * 100));
    const name = `${absolute(row.scheduled_at, zone)}: ${describe(row)}${row.extra || row.backfilled ? `, ${flags(row)}` : ""}`;
    const kind = row.state === "skipped" && MISSED.has(row.reason) ? "missed" : row.state;
    const mark = h("li", { class: `mark mark-${kind}`, "aria-label": name, title: name },
      h("span", { "aria-hidden": "true" }, GLYPHS[row.state] || "?"));
    // Through the CSSOM: the page's Content-Security-Policy refuses style attributes.
    mark.style.left = `${left.toFixed(3)}%`;
    return mark;
  });
  return h("div", { class: "timeline" },
    h("ol", { "aria-label": "Timeline of occurrences" }, marks),
    reasonBands(rows, axis),
    h("div", { class: "timeline-axis", "aria-hidden": "true" },
      h("span", {}, absolute(new Date(axis.from).toISOString(), zone)), h("span", {}, absolute(new Date(axis.to).toISOString(), zone))));
}

// Under each run of instants skipped for one reason, a band naming the reason; the marks' own names
// say it to a screen reader, so the bands are hidden from it.
function reasonBands(rows, axis) {
  const length = Math.max(1, axis.to - axis.from);
  const place = (row) => Math.min(100, Math.max(0, ((Date.parse(row.scheduled_at) - axis.from) / length) * 100));
  const runs = [];
  for (const row of rows) {
    const last = runs[runs.length - 1];
    if (row.state !== "skipped") runs.push(null);
    else if (last && last.reason === (row.reason || "skipped")) Object.assign(last, { to: row, count: last.count + 1 });
    else runs.push({ reason: row.reason || "skipped", from: row, to: row, count: 1 });
  }
  const bands = runs.filter(Boolean).map((run) => {
    const band = h("span", { class: `band ${MISSED.has(run.reason) ? "mark-missed" : "mark-skipped"}`, title: `${run.count} skipped: ${run.reason}` }, run.reason.replace("_", " "));
    band.style.left = `calc(${place(run.from).toFixed(3)}% - 6px)`;
    band.style.width = `calc(${(place(run.to) - place(run.from)).toFixed(3)}% + 12px)`;
    return band;
  });
  return h("div", { class: "timeline-bands", "aria-hidden": "true" }, bands);
}

function legend() {
  const entries = [["ran", "ran"], ["running", "running"], ["waiting", "waiting"], ["skipped", "skipped (paused, calendar, cancelled, not owed)"], ["missed", "missed (skipped by misfire or overlap)"]];
  return h("ul", { class: "legend", "aria-label": "Legend" }, entries.map(([kind, words]) =>
    h("li", {}, h("span", { class: `mark-key mark-${kind}`, "aria-hidden": "true" }, GLYPHS[kind] || GLYPHS.skipped), ` ${words}`)));
}

const moved = (rows) => rows.some((row) => row.start_at !== row.scheduled_at);

function columns(rows) {
  return ["Scheduled", ...(moved(rows) ? ["Starts"] : []), "State", "Reason", { text: "Attempts", num: true }, "Last status", "Flags"];
}

function cells(row, zone, startColumn) {
  return [when(row.scheduled_at, zone),
    ...(startColumn ? [row.start_at === row.scheduled_at ? "–" : when(row.start_at, zone)] : []),
    h("span", { class: `status occurrence-${row.state === "skipped" && MISSED.has(row.reason) ? "missed" : row.state}` }, row.state),
    row.reason || "–", { num: row.attempts }, row.last_status || "–", flags(row) || "–"];
}

// Shown above the job's actions while it has missed instants: runs the user did not choose to skip.
export function missedNotice(job) {
  const missed = job.missed || 0;
  if (missed <= 0) return null;
  const runs = missed === 1 ? "1 instant" : `${missed.toLocaleString("en")} instants`;
  return h("p", { class: "notice notice-bad", role: "status", "aria-label": "Missed instants" },
    h("strong", {}, `Missed: ${runs}`), " of its schedule did not run since the job was created, skipped by its misfire or overlap policy. ",
    "Each is marked with its reason under Occurrences.");
}
