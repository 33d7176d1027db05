// New job: a form whose schedule and time zone are previewed as they are typed.
import { post } from "../api.js";
import { announce, h, replace } from "../dom.js";
import { fieldErrors } from "./form.js";
import { previewTable } from "./job.js";

const PREVIEW_DELAY_MS = 300;

export async function render(root) {
  const inputs = {};
  const preview = h("div", { "aria-live": "polite" }, h("p", { class: "muted" }, "Type a schedule to see its next runs."));
  const formError = h("p", { class: "error", role: "alert" });
  let pending = null;
  let asked = 0;

  const field = (name, label, control, hint) => {
    control.id = `n-${name.replace(/\./g, "-")}`;
    control.setAttribute("data-field", name);
    control.setAttribute("aria-describedby", `${control.id}-error`);
    control.name = name;
    inputs[name] = control;
    return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
      hint ? h("p", { class: "muted" }, hint) : null, h("p", { class: "error", id: `${control.id}-error` }));
  };
  const text = (value = "", extra = {}) => h("input", { type: "text", value, ...extra });
  const select = (values, chosen) => h("select", {}, values.map((v) => h("option", { value: v, selected: v === chosen }, v)));

  const zones = h("datalist", { id: "zones" }, (Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : ["UTC"]).map((z) => h("option", { value: z })));
  const targetType = select(["python", "http"], "python");
  const handlerField = field("target.handler", "Handler", text("noop"), "A registered python handler, e.g. noop or fail.");
  const urlField = field("target.url", "URL", text("", { placeholder: "https://example.com/hook" }));
  urlField.hidden = true;
  targetType.addEventListener("change", () => {
    handlerField.hidden = targetType.value !== "python";
    urlField.hidden = targetType.value !== "http";
  });

  function schedulePreview() {
    clearTimeout(pending);
    pending = setTimeout(runPreview, PREVIEW_DELAY_MS);
  }

  async function runPreview() {
    const schedule = inputs.schedule.value.trim();
    const timezone = inputs.timezone.value.trim() || "UTC";
    const mine = ++asked;
    if (!schedule) return replace(preview, h("p", { class: "muted" }, "A one-off: it runs once, at Run at or now."));
    try {
      const answer = await post("/schedules/preview", { schedule, timezone, count: 10 });
      if (mine !== asked) return;
      fieldErrors(form, formError, null);
      replace(preview, previewTable(answer.next_runs, timezone));
    } catch (error) {
      if (mine !== asked) return;
      replace(preview, h("p", { class: "muted" }, "No preview while the schedule or time zone is wrong."));
      fieldErrors(form, formError, error);
    }
  }

  function body() {
    const value = (name) => inputs[name].value.trim();
    const spec = { name: value("name") || undefined, priority: value("priority"), timezone: value("timezone") || "UTC" };
    if (value("schedule")) spec.schedule = value("schedule");
    if (value("run_at")) spec.run_at = value("run_at");
    spec.target = targetType.value === "python" ? { type: "python", handler: value("target.handler") } : { type: "http", url: value("target.url") };
    if (value("max_retries")) spec.max_retries = Number(value("max_retries"));
    if (value("backoff")) spec.backoff = value("backoff").split(",").map((s) => Number(s.trim()));
    if (value("timeout_seconds")) spec.timeout_seconds = Number(value("timeout_seconds"));
    if (value("payload")) spec.payload = JSON.parse(value("payload"));
    return spec;
  }

  async function submit(event) {
    event.preventDefault();
    let spec;
    try {
      spec = body();
    } catch (error) {
      return fieldErrors(form, formError, { field: "payload", message: `payload is not JSON: ${error.message}` });
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
    field("name", "Name", text()),
    field("schedule", "Schedule", text("", { placeholder: "cron(0 9 ? * MON-FRI *), 0 9 * * 1-5 or rate(5 minutes)", oninput: schedulePreview }),
      "Empty for a one-off."),
    field("timezone", "Time zone", text("UTC", { list: "zones", oninput: schedulePreview })),
    field("run_at", "Run at", text("", { placeholder: "2026-12-01T09:00:00Z" }), "A one-off's instant (RFC 3339); empty for now."),
    field("priority", "Priority", select(["high", "medium", "low"], "medium")),
    h("div", { class: "field" }, h("label", { for: "n-target-type" }, "Target type"), Object.assign(targetType, { id: "n-target-type" })),
    handlerField, urlField,
    field("payload", "Payload (JSON)", h("textarea", {})),
    field("max_retries", "Max retries", h("input", { type: "number", min: 0, max: 20, placeholder: "5" })),
    field("backoff", "Backoff (seconds, comma-separated)", text("", { placeholder: "5, 30, 120, 600, 3600" })),
    field("timeout_seconds", "Timeout (seconds)", h("input", { type: "number", min: 1, max: 900, placeholder: "300" })),
    zones, formError,
    h("button", { type: "submit", class: "primary" }, "Create job"));

  replace(root, h("h1", {}, "New job"),
    h("div", { class: "columns" },
      h("section", { class: "card" }, form),
      h("section", { class: "card", "aria-labelledby": "h-preview" }, h("h2", { id: "h-preview" }, "Next runs"), preview)));
  return {};
}
