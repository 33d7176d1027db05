// New job: every field POST /jobs takes, every target type, and the schedule previewed as it is typed.
import { post } from "../api.js";
import { announce, h } from "../dom.js";
import { fieldErrors } from "./form.js";
import { livePreview, sharedFields, sharedValues } from "./jobform.js";
import { targetFields } from "./target.js";
import { alertFields, alertValues } from "./alertform.js";

export async function render(root) {
  const inputs = {};
  const preview = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Type a schedule to see its next runs."));
  const formError = h("p", { class: "error", role: "alert" });
  const target = targetFields("n", inputs);

  // What the reader filled in; the API's defaults stand for the rest.
  function body() {
    const values = { ...sharedValues(inputs), ...alertValues(inputs, null) };
    const spec = Object.fromEntries(Object.entries(values).filter(([, v]) => v !== null));
    spec.timezone = spec.timezone || "UTC";
    spec.target = target.value();
    return spec;
  }

  async function submit(event) {
    event.preventDefault();
    let spec;
    try {
      spec = body();
    } catch (error) {
      return fieldErrors(form, formError, error);
    }
    fieldErrors(form, formError, null);
    try {
      const job = await post("/jobs", spec);
      announce(`Created ${job.name || job.id}.`);
      location.hash = `#/jobs/${encodeURIComponent(job.id)}`;
    } catch (error) {
      fieldErrors(form, formError, error);
    }
  }

  const form = h("form", { "aria-label": "New job", onsubmit: submit, novalidate: true },
    sharedFields("n", inputs, null), target.nodes, alertFields("n", inputs, null), formError,
    h("button", { type: "submit", class: "primary" }, "Create job"));
  livePreview(form, formError, inputs, preview);

  root.replaceChildren(h("h1", {}, "New job"),
    h("div", { class: "columns" },
      h("section", { class: "card" }, form),
      h("section", { class: "card", "aria-labelledby": "h-preview" }, h("h2", { id: "h-preview" }, "Next runs"), preview)));
  return {};
}
