// Job: every field, the next runs with DST changes marked, the run history, actions and edit.
import { act, get, post } from "../api.js";
import { confirmAction } from "../dialog.js";
import { duration } from "../charts.js";
import { announce, h, masked, replace, scroller, statusBadge, table, when } from "../dom.js";
import { ACTIONS, isRecurring, readable, refusal } from "../lifecycle.js";
import { minuteNow } from "../times.js";
import { backfillCard } from "./backfill.js";
import { editForm } from "./edit.js";
import { missedNotice, occurrencesCard } from "./occurrences.js";
import { previewTable } from "./preview.js";

const FIELDS = ["id", "name", "status", "paused", "priority", "limit_key", "waiting_on_limit_since", "schedule", "timezone", "calendar", "run_at", "next_run_at", "start_at", "end_at",
  "attempt", "max_retries", "backoff", "timeout_seconds", "misfire_policy", "overlap_policy", "window_seconds", "on_failure_streak", "alert_on_missed", "triggers_waiting", "created_at", "updated_at"];

export async function render(root, params) {
  const id = params.id;
  const heading = h("h1", {}, "Job");
  const toolbar = h("div", { class: "toolbar", role: "group", "aria-label": "Job actions" });
  const waiting = h("div");
  const missed = h("div");
  const occurrences = occurrencesCard(id);
  const fields = h("div");
  const upcoming = h("div");
  const runs = h("div");
  const editor = h("div");
  let job = null;
  let shown = "";
  let previewed = "";

  async function refresh() {
    const [read, history] = await Promise.all([get(`/jobs/${encodeURIComponent(id)}`), get(`/jobs/${encodeURIComponent(id)}/runs?limit=50`)]);
    // Read on their own, and never failing the page: a failed read is shown in their card.
    occurrences.refresh(read);
    const text = JSON.stringify([read, history, minuteNow()]);
    if (text === shown) return;
    shown = text;
    job = read;
    heading.textContent = `Job ${job.name || job.id}`;
    drawActions();
    drawWaiting(waiting, job);
    replace(missed, missedNotice(job));
    drawFields(fields, job);
    drawRuns(runs, history.runs, job.timezone);
    const key = JSON.stringify([job.schedule, job.timezone, job.calendar, job.next_run_at, job.status, job.paused, job.triggers_waiting, minuteNow()]);
    if (key !== previewed) {
      previewed = key;
      await drawUpcoming(upcoming, job);
    }
  }

  // Each action offered as the job's state allows; one that does not fit is disabled and says why.
  function drawActions() {
    const editing = editor.childElementCount > 0;
    replace(toolbar, Object.entries(ACTIONS).map(([action, [label]]) => {
      const why = refusal(job, action);
      const button = h("button", { type: "button", class: action === "cancel" ? "danger" : null, disabled: Boolean(why), title: why,
        onclick: () => (action === "edit" ? openEditor(button) : run(action, label)) }, label);
      if (action === "edit") button.setAttribute("aria-expanded", String(editing));
      return button;
    }));
  }

  async function run(action, label) {
    const name = job.name || job.id;
    if (action === "cancel") {
      const sure = await confirmAction({ question: `Cancel ${name}?`, detail: "No further attempt or occurrence starts. This cannot be undone.", yes: "Yes, cancel it", no: "No, keep it" });
      if (!sure) return;
    }
    try {
      await act(id, action);
      announce(`${label}: done.`);
    } catch (error) {
      announce(`${label} refused: ${readable(error.message, job, name)}`, true);
    }
    shown = "";
    await refresh();
  }

  function openEditor(button) {
    button.setAttribute("aria-expanded", "true");
    replace(editor, editForm(job, job.name || job.id, async () => {
      replace(editor);
      shown = "";
      await refresh();
    }));
  }

  const backfill = h("div");
  replace(root, heading, missed, waiting, toolbar, editor,
    h("div", { class: "columns" },
      h("section", { class: "card", "aria-labelledby": "h-fields" }, h("h2", { id: "h-fields" }, "Fields"), fields),
      h("section", { class: "card", "aria-labelledby": "h-next" }, h("h2", { id: "h-next" }, "Next runs"), upcoming)),
    occurrences.node,
    backfill,
    h("section", { class: "card", "aria-labelledby": "h-runs" }, h("h2", { id: "h-runs" }, "Run history"), runs));
  try {
    await refresh();
    if (isRecurring(job) && job.status !== "cancelled") {
      replace(backfill, backfillCard(job, async () => {
        shown = "";
        await refresh();
      }));
    }
  } catch (error) {
    const missing = error.status === 404 || error.status === 400;
    heading.textContent = missing ? "No such job" : "Job";
    replace(fields, h("p", { role: "alert" }, missing ? `No job has the id ${id}.` : `The job could not be read: ${error.message}`),
      h("p", {}, h("a", { href: "#/jobs" }, "Back to the jobs")));
    if (missing) return {};
  }
  return { refresh };
}

function drawFields(node, job) {
  const value = (name) => {
    const v = job[name];
    if (name === "status") return statusBadge(v);
    if (name === "limit_key" && v) return limitLink(v);
    if (name === "waiting_on_limit_since") return when(v, job.timezone);
    if (name === "calendar") return calendarText(v);
    if (name.endsWith("_at")) return when(v, job.timezone);
    if (Array.isArray(v)) return v.join(", ");
    return v === null || v === undefined ? "–" : String(v);
  };
  const rows = FIELDS.map((name) => h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, value(name))));
  const last = job.last_run;
  rows.push(h("tr", {}, h("th", { scope: "row" }, "last_run"),
    h("td", {}, last ? `${last.status}, started ${when(last.started_at, job.timezone)} (scheduled ${when(last.scheduled_at, job.timezone)})${last.error ? ": " + last.error : ""}` : "–")));
  rows.push(h("tr", {}, h("th", { scope: "row" }, "target"), h("td", {}, h("pre", {}, JSON.stringify(masked(job.target), null, 2)))));
  rows.push(h("tr", {}, h("th", { scope: "row" }, "on_dead"),
    h("td", {}, job.on_dead ? h("pre", {}, JSON.stringify(masked(job.on_dead), null, 2)) : "–")));
  rows.push(h("tr", {}, h("th", { scope: "row" }, "payload"), h("td", {}, h("pre", {}, JSON.stringify(job.payload, null, 2)))));
  replace(node, scroller(h("table", {}, h("caption", {}, "Every field of the job"), h("tbody", {}, rows))));
}

// A calendar in words: whose holidays, and which dates (in the job's zone), it excludes.
function calendarText(calendar) {
  if (!calendar) return "–";
  const parts = [];
  if (calendar.holidays) parts.push(`the public holidays of ${calendar.holidays}`);
  if (calendar.exclude_dates.length) parts.push(calendar.exclude_dates.join(", "));
  return parts.length ? `no runs on ${parts.join("; nor on ")}` : "excludes no date";
}

// The key's limit on the Limits page, which offers to set one when the key has none.
function limitLink(key) {
  return h("a", { href: `#/limits/${encodeURIComponent(key)}` }, key);
}

// A due occurrence its key holds back is queued and not late by its own doing: say so, and since when.
function drawWaiting(node, job) {
  if (!job.waiting_on_limit_since || !job.limit_key) return replace(node);
  replace(node, h("p", { class: "notice", role: "status" },
    "Waiting on its limit key ", limitLink(job.limit_key), ` since ${when(job.waiting_on_limit_since, job.timezone)}: `,
    "the occurrence is due and starts as soon as the key's limit allows."));
}

function drawRuns(node, runs, zone) {
  if (!runs.length) return replace(node, h("p", { class: "muted" }, "No attempt has run yet."));
  replace(node, table("Attempts, newest first", ["Scheduled", { text: "Attempt", num: true }, "Status", "Started", "Finished", "Error", "Worker", "Trace", { text: "Limit wait", num: true }],
    runs.map((r) => [when(r.scheduled_at, zone), { num: r.attempt }, statusBadge(r.status), when(r.started_at, zone), when(r.finished_at, zone), r.error || "–", r.worker || "–", traceCell(r.trace_id),
      { num: r.limit_wait_ms === null || r.limit_wait_ms === undefined ? null : duration(r.limit_wait_ms) }])));
}

// A run's trace: a link when the console was given a trace viewer's URL (`sundial console
// --trace-url`), else its id. {trace_id} is the W3C id, {xray_trace_id} the same trace as X-Ray writes it.
const traceUrl = document.querySelector('meta[name="sundial-trace-url"]')?.content || "";

function traceCell(traceId) {
  if (!traceId) return "–";
  const code = h("code", { class: "trace" }, traceId);
  if (!traceUrl) return code;
  const xray = `1-${traceId.slice(0, 8)}-${traceId.slice(8)}`;
  const href = traceUrl.replaceAll("{trace_id}", traceId).replaceAll("{xray_trace_id}", xray);
  return h("a", { href, rel: "noopener noreferrer", target: "_blank", title: "Open the trace" }, code);
}

// The next runs are the API's next_run_at, then the schedule after it: the same phase the scheduler
// keeps. Where the API gives no next run, or a triggered run comes first (after which the schedule
// resumes where it was, an instant the API does not answer), the page says so rather than guess.
async function drawUpcoming(node, job) {
  const next = job.next_run_at;
  const note = (text) => replace(node, h("p", {}, text));
  if (job.status === "cancelled") return note("None: the job is cancelled.");
  if (job.status === "succeeded") return note("None: the job has finished.");
  if (!isRecurring(job)) return note(next ? `A one-off, due at ${when(next, job.timezone)}.` : "A one-off: nothing waits to run.");
  if (job.paused) return note("None while paused: resume it to put it back on its schedule.");
  if (job.triggers_waiting > 0) return note(`A triggered run comes first${next ? `, due at ${when(next, job.timezone)}` : ""}; the schedule resumes where it was after it, and its runs are listed then.`);
  if (job.status === "failed" && next) return note(`A retry is due at ${when(next, job.timezone)}; the schedule goes on after this occurrence, and its runs are listed once it has ended.`);
  if (!next) return note("An attempt is running: the next runs are listed once it has ended.");
  try {
    // With a spread window the API answers this job's own start instants (`starts`), as the tick uses them.
    const asked = { schedule: job.schedule, timezone: job.timezone, calendar: job.calendar, count: 9, after: next, window_seconds: job.window_seconds || 0, job_id: job.id };
    const answer = await post("/schedules/preview", asked);
    replace(node, previewTable([next, ...(answer.starts || answer.next_runs)], job.timezone));
  } catch (error) {
    replace(node, h("p", { role: "alert" }, error.message));
  }
}
