// The fields New job and Edit share (those PATCH accepts), read back in the API's own form, and the
// live preview of the schedule in its time zone as it is typed.
import { post } from "../api.js";
import { h, replace } from "../dom.js";
import { zones } from "../times.js";
import { clearError, fieldOf, number, select, showError, text } from "./form.js";
import { excludedList, previewTable } from "./preview.js";

const PREVIEW_DELAY_MS = 300;
const MISFIRE = ["run_once", "skip", "run_all"];
const OVERLAP = ["skip", "buffer"];
const WHEN_HINT = "RFC 3339 with an offset, e.g. 2026-12-01T09:00:00Z.";

// `job` fills the fields (Edit) or is null (New: the API's defaults). `timing` says which of
// schedule and run_at to offer: both for New, the job's own kind for Edit.
export function sharedFields(prefix, inputs, job, timing = ["schedule", "run_at"]) {
  const j = job || {};
  const zoneList = h("datalist", { id: `${prefix}-zones` }, zones().map((zone) => h("option", { value: zone })));
  const field = (name, label, control, hint) => fieldOf(prefix, inputs, name, label, control, hint);
  return [
    field("name", "Name", text(j.name)),
    timing.includes("schedule") ? field("schedule", "Schedule",
      text(j.schedule, { placeholder: "cron(0 9 ? * MON-FRI *), 0 9 * * 1-5 or rate(5 minutes)" }),
      job ? null : "Empty for a one-off.") : null,
    field("timezone", "Time zone", text(j.timezone || "UTC", { list: zoneList.id }), "Where the schedule is read."),
    zoneList,
    timing.includes("schedule") ? calendarFields(prefix, inputs, j.calendar) : null,
    timing.includes("run_at") ? field("run_at", "Run at", text(j.run_at, { placeholder: "2026-12-01T09:00:00Z" }),
      `A one-off's instant; empty for now. ${WHEN_HINT}`) : null,
    field("start_at", "Active from", text(j.start_at), `Recurring: no occurrence before it. ${WHEN_HINT}`),
    field("end_at", "Active until", text(j.end_at), "Recurring: no occurrence at or after it."),
    field("misfire_policy", "Misfire policy", select(MISFIRE, j.misfire_policy || "run_once"),
      "Occurrences missed while down or paused: run the latest once, skip them, or run each."),
    field("overlap_policy", "Overlap policy", select(OVERLAP, j.overlap_policy || "skip"),
      "An occurrence due while the previous one runs: skip it, or run it after."),
    field("window_seconds", "Spread window (seconds)", number(j.window_seconds, { min: 0, max: 3600, placeholder: "0" }),
      "Each occurrence starts at a point of [instant, instant + window) fixed by the job; Next runs shows it."),
    field("priority", "Priority", select(["high", "medium", "low"], j.priority || "medium")),
    field("limit_key", "Limit key", text(j.limit_key, { placeholder: "payments-api", autocomplete: "off" }),
      "The jobs naming the same key share its limit (see Limits). Empty: none."),
    field("payload", "Payload (JSON)", h("textarea", {}, job ? JSON.stringify(j.payload, null, 2) : "")),
    field("max_retries", "Max retries", number(j.max_retries, { min: 0, max: 20, placeholder: "5" })),
    field("backoff", "Backoff (seconds, comma-separated)", text(j.backoff ? j.backoff.join(", ") : "", { placeholder: "5, 30, 120, 600, 3600" })),
    field("timeout_seconds", "Timeout (seconds)", number(j.timeout_seconds, { min: 1, max: 900, placeholder: "300" })),
  ];
}

// A recurring job's calendar: the dates, in its zone, on which no occurrence runs. An error about the
// calendar as a whole (a one-off has none; one that leaves nothing to run) is shown at the group.
function calendarFields(prefix, inputs, calendar) {
  const c = calendar || {};
  const field = (name, label, control, hint) => fieldOf(prefix, inputs, name, label, control, hint);
  const error = h("p", { class: "error", id: `${prefix}-calendar-error` });
  const legendId = `${prefix}-calendar-legend`;
  const group = h("fieldset", { "aria-labelledby": legendId, "data-field": "calendar", "aria-describedby": error.id },
    h("legend", { id: legendId }, "Calendar"),
    field("calendar.exclude_dates", "Excluded dates", text((c.exclude_dates || []).join(", "), { placeholder: "2026-12-24, 2026-12-31", autocomplete: "off" }),
      "Recurring: no occurrence on these dates in the job's time zone (YYYY-MM-DD, comma-separated)."),
    field("calendar.holidays", "Holidays", text(c.holidays, { placeholder: "DE, DE-BY or US-CA", autocomplete: "off" }),
      "No occurrence on the public holidays of this country, or of a subdivision of it. Empty: none."),
    error);
  group.addEventListener("input", () => clearError(group));
  return group;
}

// The calendar as the API answers it (dates sorted, each once), or null when it excludes nothing.
function calendarValue(inputs) {
  const dates = [...new Set(inputs["calendar.exclude_dates"].value.split(/[\s,]+/).filter(Boolean))].sort();
  const holidays = inputs["calendar.holidays"].value.trim() || null;
  return dates.length || holidays ? { exclude_dates: dates, holidays } : null;
}

// The shared fields' values as the API takes them; empty fields left out (New) or null (Edit).
// Throws {field, message} for a value that cannot be sent as typed.
export function sharedValues(inputs) {
  const values = {};
  for (const name of ["name", "schedule", "timezone", "run_at", "start_at", "end_at", "misfire_policy", "overlap_policy", "priority", "limit_key"]) {
    if (inputs[name]) values[name] = inputs[name].value.trim() || null;
  }
  for (const name of ["max_retries", "timeout_seconds", "window_seconds"]) {
    values[name] = inputs[name].value.trim() === "" ? null : Number(inputs[name].value);
  }
  if (inputs["calendar.exclude_dates"]) values.calendar = calendarValue(inputs);
  const backoff = inputs.backoff.value.trim();
  values.backoff = backoff ? backoff.split(",").map((s) => Number(s.trim())) : null;
  const payload = inputs.payload.value.trim();
  try {
    values.payload = payload ? JSON.parse(payload) : null;
  } catch (error) {
    throw { field: "payload", message: `payload is not JSON: ${error.message}` };
  }
  return values;
}

// Previews the schedule in its zone, less what its calendar excludes (listed below the runs), a moment
// after any of them changes; an error in one is shown at its input (without taking the focus from
// where the reader types) and cleared once it is right.
export function livePreview(form, formError, inputs, node, suffix = "") {
  if (!inputs.schedule) return async () => {};
  let pending = null;
  let asked = 0;
  const previewed = ["schedule", "timezone", ...(inputs["calendar.exclude_dates"] ? ["calendar", "calendar.exclude_dates", "calendar.holidays"] : [])];

  async function run() {
    const schedule = inputs.schedule.value.trim();
    const timezone = inputs.timezone.value.trim() || "UTC";
    const mine = ++asked;
    if (!schedule) return replace(node, h("p", { class: "muted" }, "A one-off: it runs once, at Run at or now."));
    try {
      const calendar = inputs["calendar.exclude_dates"] ? calendarValue(inputs) : null;
      const answer = await post("/schedules/preview", { schedule, timezone, count: 10, calendar, explain: Boolean(calendar) });
      if (mine !== asked) return;
      clearFields(form, previewed);
      replace(node, previewTable(answer.next_runs, timezone, suffix), excludedList(answer.excluded || [], timezone));
    } catch (error) {
      if (mine !== asked) return;
      replace(node, h("p", { class: "muted" }, "No preview while the schedule, time zone or calendar is wrong."));
      clearFields(form, previewed);
      if (previewed.includes(error.field)) showError(form, formError, error, false);
    }
  }

  const later = () => {
    clearTimeout(pending);
    pending = setTimeout(run, PREVIEW_DELAY_MS);
  };
  for (const name of previewed) inputs[name]?.addEventListener("input", later);
  return run;
}

function clearFields(form, names) {
  for (const name of names) {
    const input = form.querySelector(`[data-field="${name}"]`);
    if (input) clearError(input);
  }
}
