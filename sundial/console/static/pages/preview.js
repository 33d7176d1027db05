// A list of upcoming runs: in UTC, in the schedule's zone, and how soon, with each DST change marked.
import { h, table } from "../dom.js";
import { offsetAt, relative } from "../times.js";

// A run whose UTC offset differs from the one before it comes after a DST transition, and says so.
// `suffix` tells two lists on one page apart (", after this edit").
export function previewTable(runs, zone, suffix = "") {
  let before = null;
  const rows = runs.map((run) => {
    const offset = offsetAt(run, zone);
    const change = before !== null && offset !== before ? `DST change: ${before} → ${offset}` : "";
    before = offset;
    return [run.replace("T", " "), `${localTime(run, zone)} (${offset})`, relative(run), change ? { dst: change } : ""];
  });
  return table(`Next ${runs.length} runs in ${zone}${suffix}`, ["UTC", "Local time", "From now", "DST"], rows);
}

function localTime(run, zone) {
  return new Intl.DateTimeFormat("en-CA", { timeZone: zone, dateStyle: "short", timeStyle: "medium", hourCycle: "h23" }).format(new Date(run));
}

// The occurrences a calendar passed over between the runs listed (the API's `excluded`, with `explain`).
export function excludedList(excluded, zone) {
  if (!excluded.length) return null;
  return h("div", {},
    h("p", { class: "muted" }, "Passed over by the calendar:"),
    h("ul", { "aria-label": "Excluded by the calendar" }, excluded.map((run) => h("li", {}, `${run.replace("T", " ")} (${localTime(run, zone)})`))));
}
