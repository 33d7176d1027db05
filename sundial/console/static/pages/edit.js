// Edit: the fields PATCH /jobs/{id} accepts (a target cannot be changed), only the changed ones
// sent, with the new schedule previewed as it is typed.
import { call } from "../api.js";
import { announce, h } from "../dom.js";
import { isRecurring } from "../lifecycle.js";
import { fieldErrors } from "./form.js";
import { livePreview, sharedFields, sharedValues } from "./jobform.js";
import { alertFields, alertValues } from "./alertform.js";

export function editForm(job, label, done) {
  const inputs = {};
  const formError = h("p", { class: "error", role: "alert" });
  const preview = h("div", { "aria-live": "polite" });
  // A schedule cannot become a run time by an edit, nor the reverse: offer the job's own kind.
  const timing = job.schedule ? ["schedule"] : ["run_at"];

  async function submit(event) {
    event.preventDefault();
    let patch;
    try {
      patch = changes(job, { ...sharedValues(inputs), ...alertValues(inputs, job) });
    } catch (error) {
      return fieldErrors(form, formError, error);
    }
    fieldErrors(form, formError, null);
    if (!Object.keys(patch).length) return done();
    try {
      await call("PATCH", `/jobs/${encodeURIComponent(job.id)}`, patch);
      announce(`Saved ${label}.`);
      await done();
    } catch (error) {
      fieldErrors(form, formError, error);
    }
  }

  const form = h("form", { class: "card", "aria-label": "Edit job", onsubmit: submit, novalidate: true },
    h("h2", {}, "Edit job"),
    sharedFields("e", inputs, job, timing),
    alertFields("e", inputs, job),
    job.schedule ? h("section", { "aria-label": "Preview of the edited schedule" }, h("h3", {}, "Next runs after this edit"), preview) : null,
    formError,
    h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary" }, "Save changes"), h("button", { type: "button", onclick: done }, "Close editor")));
  const first = livePreview(form, formError, inputs, preview, ", after this edit");
  if (isRecurring(job)) first();
  return form;
}

// The values that differ from the job's; a field emptied is sent as null where the API allows it,
// and left as it is where it does not (a number, the backoff or the policies keep a value).
function changes(job, values) {
  const patch = {};
  for (const [name, value] of Object.entries(values)) {
    if (!(name in job)) continue;
    if (value === null && ["max_retries", "timeout_seconds", "window_seconds", "backoff", "timezone"].includes(name)) continue;
    if (JSON.stringify(value) !== JSON.stringify(job[name] ?? null)) patch[name] = value;
  }
  return patch;
}
