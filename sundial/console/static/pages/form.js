// What the forms share: errors shown at the input the API names in `field`, and UTC offsets.

// Clears the form's errors, then shows `error` at the input whose data-field is the API's `field`
// or its nearest parent ("backoff.2" -> "backoff"); at the form when no input matches.
export function fieldErrors(form, formError, error) {
  for (const input of form.querySelectorAll("[data-field]")) {
    input.removeAttribute("aria-invalid");
    document.getElementById(input.getAttribute("aria-describedby")).textContent = "";
  }
  formError.textContent = "";
  if (!error) return;
  const input = inputFor(form, error.field);
  if (!input) {
    formError.textContent = error.field ? `${error.field}: ${error.message}` : error.message;
    return;
  }
  input.setAttribute("aria-invalid", "true");
  document.getElementById(input.getAttribute("aria-describedby")).textContent = error.message;
  input.focus();
}

function inputFor(form, field) {
  let name = field || "";
  while (name) {
    const input = form.querySelector(`[data-field="${CSS.escape(name)}"]`);
    if (input) return input;
    name = name.includes(".") ? name.slice(0, name.lastIndexOf(".")) : "";
  }
  return null;
}

// "UTC+1", "UTC-4:30" or "UTC" for an instant in a zone.
export function offsetAt(instant, zone) {
  const parts = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "shortOffset" }).formatToParts(new Date(instant));
  const name = parts.find((p) => p.type === "timeZoneName").value;
  return name.replace("GMT", "UTC");
}
