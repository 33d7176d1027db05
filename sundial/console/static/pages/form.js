// What the forms share: labelled fields, and errors shown at the input the API names in `field`.
import { h } from "../dom.js";

// A labelled control with a hint and a place for its error. `prefix` keeps two forms' ids apart;
// `inputs` collects the controls by the API's field name. Editing a field clears its error: the
// message was about the value it had.
export function fieldOf(prefix, inputs, name, label, control, hint) {
  control.id = `${prefix}-${name.replace(/\./g, "-")}`;
  control.setAttribute("data-field", name);
  control.setAttribute("aria-describedby", `${control.id}-error`);
  control.name = name;
  control.addEventListener("input", () => clearError(control));
  inputs[name] = control;
  return h("div", { class: "field" }, h("label", { for: control.id }, label), control,
    hint ? h("p", { class: "muted" }, hint) : null, h("p", { class: "error", id: `${control.id}-error` }));
}

export const text = (value = "", extra = {}) => h("input", { type: "text", value: value ?? "", ...extra });
export const number = (value, extra = {}) => h("input", { type: "number", value: value ?? "", ...extra });
export const select = (values, chosen) => h("select", {}, values.map((v) => h("option", { value: v, selected: v === chosen }, v)));

export function clearError(control) {
  control.removeAttribute("aria-invalid");
  const described = document.getElementById(control.getAttribute("aria-describedby"));
  if (described) described.textContent = "";
}

// Clears the form's errors, then shows `error` at the input whose data-field is the API's `field`
// or its nearest parent ("target.headers.X.secret" -> "target.headers.X", "backoff[2]" -> "backoff");
// at the form when no input matches. `focus` is off while the reader is typing elsewhere.
export function fieldErrors(form, formError, error, focus = true) {
  for (const input of form.querySelectorAll("[data-field]")) clearError(input);
  formError.textContent = "";
  if (error) showError(form, formError, error, focus);
}

export function showError(form, formError, error, focus = true) {
  const input = inputFor(form, error.field);
  if (!input) {
    formError.textContent = error.field ? `${error.field}: ${error.message}` : error.message;
    return;
  }
  input.setAttribute("aria-invalid", "true");
  document.getElementById(input.getAttribute("aria-describedby")).textContent = error.message;
  if (focus) input.focus();
}

function inputFor(form, field) {
  let name = (field || "").replace(/\[\d+\]/g, "");
  while (name) {
    const input = [...form.querySelectorAll("[data-field]")].find((node) => node.getAttribute("data-field") === name);
    if (input && !input.closest("[hidden]")) return input;
    name = name.includes(".") ? name.slice(0, name.lastIndexOf(".")) : "";
  }
  return null;
}
