// Job: every field, the next runs with DST changes marked, the run history, actions and edit.
import { act, call, get, post } from "../api.js";
import { announce, h, masked, replace, statusBadge, table, when } from "../dom.js";
import { fieldErrors, offsetAt } from "./form.js";

const ACTIONS = [["pause", "Pause"], ["resume", "Resume"], ["trigger", "Run now"], ["cancel", "Cancel"], ["retry", "Retry"]];
const FIELDS = ["id", "name", "status", "paused", "priority", "schedule", "timezone", "run_at", "next_run_at", "start_at", "end_at",
  "attempt", "max_retries", "backoff", "timeout_seconds", "misfire_policy", "overlap_policy", "created_at", "updated_at"];

export async function render(root, params) {
  const id = params.id;
  const heading = h("h1", {}, "Job");
  const fields = h("div");
  const upcoming = h("div");
  const runs = h("div");
  const editor = h("div");
  let shown = "";
  let previewed = "";

  async function refresh() {
    const [job, history] = await Promise.all([get(`/jobs/${encodeURIComponent(id)}`), get(`/jobs/${encodeURIComponent(id)}/runs?limit=50`)]);
    const text = JSON.stringify([job, history]);
    if (text === shown) return;
    shown = text;
    heading.textContent = `Job ${job.name || job.id}`;
    drawFields(fields, job);
    drawRuns(runs, history.runs);
    const key = `${job.schedule}|${job.timezone}|${job.run_at}|${job.next_run_at}`;
    if (key !== previewed) {
      previewed = key;
      await drawUpcoming(upcoming, job);
    }
  }

  async function run(action, label) {
    try {
      await act(id, action);
      announce(`${label}: done.`);
    } catch (error) {
      announce(`${label} refused: ${error.message}`, true);
    }
    await refresh();
  }

  const actions = ACTIONS.map(([action, label]) => h("button", { type: "button", class: action === "cancel" ? "danger" : null, onclick: () => run(action, label) }, label));
  const edit = h("button", { type: "button", "aria-expanded": "false", onclick: () => openEditor() }, "Edit");

  function openEditor() {
    const job = JSON.parse(shown)[0];
    edit.setAttribute("aria-expanded", "true");
    replace(editor, editForm(job, async () => {
      replace(editor);
      edit.setAttribute("aria-expanded", "false");
      shown = "";
      await refresh();
    }));
  }

  replace(root, heading,
    h("div", { class: "toolbar", role: "group", "aria-label": "Job actions" }, actions, edit),
    editor,
    h("div", { class: "columns" },
      h("section", { class: "card", "aria-labelledby": "h-fields" }, h("h2", { id: "h-fields" }, "Fields"), fields),
      h("section", { class: "card", "aria-labelledby": "h-next" }, h("h2", { id: "h-next" }, "Next runs"), upcoming)),
    h("section", { class: "card", "aria-labelledby": "h-runs" }, h("h2", { id: "h-runs" }, "Run history"), runs));
  try {
    await refresh();
  } catch (error) {
    replace(fields, h("p", { role: "alert" }, `The job could not be read: ${error.message}`));
  }
  return { refresh };
}

function drawFields(node, job) {
  const value = (name) => {
    const v = job[name];
    if (name === "status") return statusBadge(v);
    if (name.endsWith("_at")) return when(v);
    if (Array.isArray(v)) return v.join(", ");
    return v === null || v === undefined ? "–" : String(v);
  };
  const rows = FIELDS.map((name) => h("tr", {}, h("th", { scope: "row" }, name), h("td", {}, value(name))));
  const last = job.last_run;
  rows.push(h("tr", {}, h("th", { scope: "row" }, "last_run"),
    h("td", {}, last ? `${last.status}, started ${when(last.started_at)} (scheduled ${when(last.scheduled_at)})${last.error ? ": " + last.error : ""}` : "–")));
  rows.push(h("tr", {}, h("th", { scope: "row" }, "target"), h("td", {}, h("pre", {}, JSON.stringify(masked(job.target), null, 2)))));
  rows.push(h("tr", {}, h("th", { scope: "row" }, "payload"), h("td", {}, h("pre", {}, JSON.stringify(job.payload, null, 2)))));
  replace(node, h("table", {}, h("caption", {}, "Every field of the job"), h("tbody", {}, rows)));
}

function drawRuns(node, runs) {
  if (!runs.length) return replace(node, h("p", { class: "muted" }, "No attempt has run yet."));
  replace(node, table("Attempts, newest first", ["Scheduled", { text: "Attempt", num: true }, "Status", "Started", "Finished", "Error", "Worker"],
    runs.map((r) => [when(r.scheduled_at), { num: r.attempt }, statusBadge(r.status), when(r.started_at), when(r.finished_at), r.error || "–", r.worker || "–"])));
}

async function drawUpcoming(node, job) {
  if (!job.schedule) {
    return replace(node, h("p", {}, job.run_at ? `A one-off at ${when(job.run_at)}.` : "A one-off."));
  }
  try {
    // From the job's own next run, so that a rate() schedule keeps its phase.
    const next = job.next_run_at;
    const request = { schedule: job.schedule, timezone: job.timezone, count: next ? 9 : 10, ...(next ? { after: next } : {}) };
    const answer = await post("/schedules/preview", request);
    replace(node, previewTable(next ? [next, ...answer.next_runs] : answer.next_runs, job.timezone));
  } catch (error) {
    replace(node, h("p", { role: "alert" }, error.message));
  }
}

// The next runs in UTC and in the job's zone; a run whose UTC offset differs from the one before it
// comes after a DST transition, and says so.
export function previewTable(runs, zone) {
  let before = null;
  const rows = runs.map((run) => {
    const offset = offsetAt(run, zone);
    const change = before !== null && offset !== before ? h("span", { class: "dst" }, `DST change: ${before} → ${offset}`) : "";
    before = offset;
    return [when(run), `${localTime(run, zone)} (${offset})`, change];
  });
  return table(`Next ${runs.length} runs in ${zone}`, ["UTC", "Local time", "DST"], rows);
}

function localTime(run, zone) {
  return new Intl.DateTimeFormat("en-CA", { timeZone: zone, dateStyle: "short", timeStyle: "medium", hourCycle: "h23" }).format(new Date(run));
}

function editForm(job, done) {
  const inputs = {};
  const field = (name, label, value, type = "text") => {
    const input = h("input", { id: `e-${name}`, name, type, value: value ?? "", "data-field": name, "aria-describedby": `e-${name}-error` });
    inputs[name] = input;
    return h("div", { class: "field" }, h("label", { for: input.id }, label), input, h("p", { class: "error", id: `e-${name}-error` }));
  };
  const formError = h("p", { class: "error", role: "alert" });
  const form = h("form", { class: "card", "aria-label": "Edit job", onsubmit: async (event) => {
    event.preventDefault();
    const patch = {};
    for (const [name, input] of Object.entries(inputs)) {
      const original = job[name] === null || job[name] === undefined ? "" : String(job[name]);
      if (input.value === original) continue;
      patch[name] = input.type === "number" ? Number(input.value) : input.value || null;
    }
    fieldErrors(form, formError, null);
    try {
      await call("PATCH", `/jobs/${encodeURIComponent(job.id)}`, patch);
      announce("Saved.");
      await done();
    } catch (error) {
      fieldErrors(form, formError, error);
    }
  } },
  h("h2", {}, "Edit job"),
  field("name", "Name", job.name),
  job.schedule ? field("schedule", "Schedule", job.schedule) : field("run_at", "Run at (RFC 3339)", job.run_at),
  field("timezone", "Time zone", job.timezone),
  field("max_retries", "Max retries", job.max_retries, "number"),
  field("timeout_seconds", "Timeout (seconds)", job.timeout_seconds, "number"),
  formError,
  h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary" }, "Save changes"), h("button", { type: "button", onclick: done }, "Close editor")));
  return form;
}
