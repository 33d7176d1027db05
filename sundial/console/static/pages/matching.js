// Acting on every job the list's filters match, across pages: one operation on the server
// (POST /jobs/actions, docs/api.md "Many jobs at once"), its progress read until it is done.
import { get, post } from "../api.js";
import { h, replace } from "../dom.js";
import { ACTIONS, readable } from "../lifecycle.js";

const POLL_MS = 1000;
// The filters an operation takes, as the list's address names them.
const OPERATION_FILTERS = ["status", "priority", "health", "name_prefix"];

// The operation's filter for the list's filters; null where the list searches a name it contains,
// which no operation takes (an index decides an operation's jobs, and none holds substrings).
export function actionFilter(filters) {
  if (filters.name) return null;
  return Object.fromEntries(OPERATION_FILTERS.filter((key) => filters[key]).map((key) => [key, filters[key]]));
}

// "120", or "about 6,000" where the API's total is an estimate.
export function countOf(total, estimate) {
  return `${estimate ? "about " : ""}${(total ?? 0).toLocaleString("en")}`;
}

// "Cancel all 120 matching jobs?": a job whose state does not allow the action is refused and named.
export function matchingQuestion(action, count) {
  const [label, verb, past] = ACTIONS[action];
  const undo = action === "cancel" ? "This cannot be undone." : `Each is ${past} now.`;
  return {
    question: `${label} all ${count} matching jobs?`,
    detail: `${undo} A job whose state does not allow it is refused, and listed with why.`,
    yes: `Yes, ${verb} all ${count} matching jobs`,
    no: "Go back",
  };
}

// Starts the operation and draws its progress into `region` until it is done (or the page is left);
// answers the operation as it was last read.
export async function actOnMatches(action, filter, region) {
  // One live region, its text changed in place, so that each change is announced.
  const status = h("p", { role: "status", "aria-label": "Progress on every matching job" }, "Starting…");
  const reasons = h("div");
  replace(region, status, reasons);
  let operation = await post("/jobs/actions", { action, filter });
  for (;;) {
    drawProgress(status, reasons, operation);
    if (operation.state === "done" || !region.isConnected) return operation;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    operation = await get(`/jobs/actions/${encodeURIComponent(operation.id)}`);
  }
}

// "Cancel all matching jobs: 100 done, 1 refused, about 19 left…", then the reasons of each refusal.
function drawProgress(status, reasons, operation) {
  const [label] = ACTIONS[operation.action];
  const finished = operation.state === "done";
  const counts = `${operation.done.toLocaleString("en")} done, ${operation.refused.toLocaleString("en")} refused`;
  const left = operation.left === null ? ", counting the rest…" : `, ${countOf(operation.left, operation.left_is_estimate)} left…`;
  status.textContent = `${label} all matching jobs${finished ? ", finished" : ""}: ${counts}${finished ? "." : left}`;
  const items = operation.refusals.map((refused) => {
    const job = { id: refused.job_id };
    return h("li", {}, h("a", { href: `#/jobs/${encodeURIComponent(refused.job_id)}` }, refused.job_id), ": ",
      readable(refused.message, job, "it"));
  });
  const more = operation.refused > items.length ? h("p", { class: "muted" }, `The first ${items.length} reasons of ${operation.refused}.`) : null;
  replace(reasons, items.length ? h("ul", { "aria-label": "Refused jobs, with why" }, items) : null, more);
}
