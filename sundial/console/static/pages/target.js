// The New job form's target: each type of docs/api.md ("Targets") with its own fields, and an http
// target's method and headers, a header's value either a string or a secret's ARN.
import { h } from "../dom.js";
import { clearError, fieldOf, select, text } from "./form.js";

const METHODS = ["POST", "GET", "PUT", "PATCH", "DELETE"];
// type -> [field, label, default, placeholder]
const FIELDS = {
  python: [["handler", "Handler", "noop", "noop"]],
  http: [["url", "URL", "", "https://example.com/hook"]],
  lambda: [["function_arn", "Function ARN", "", "arn:aws:lambda:eu-west-1:111122223333:function:report"]],
  sqs: [["queue_url", "Queue URL", "", "https://sqs.eu-west-1.amazonaws.com/111122223333/reports"]],
  sns: [["topic_arn", "Topic ARN", "", "arn:aws:sns:eu-west-1:111122223333:reports"]],
  eventbridge: [
    ["event_bus_name", "Event bus", "default", "default"],
    ["detail_type", "Detail type", "", "report.due"],
    ["source", "Source", "", "com.example.reports"],
  ],
};

export function targetFields(prefix, inputs) {
  const type = select(Object.keys(FIELDS), "python");
  const groups = {};
  for (const [kind, fields] of Object.entries(FIELDS)) {
    groups[kind] = h("div", { hidden: kind !== "python" },
      fields.map(([name, label, value, placeholder]) => fieldOf(prefix, inputs, `target.${name}`, label, text(value, { placeholder }))));
  }
  groups.http.append(fieldOf(prefix, inputs, "target.method", "Method", select(METHODS, "POST")));
  const headers = headerRows(prefix);
  groups.http.append(headers.node);
  type.addEventListener("change", () => {
    for (const [kind, group] of Object.entries(groups)) group.hidden = kind !== type.value;
  });

  function value() {
    const kind = type.value;
    const target = { type: kind };
    for (const [name] of FIELDS[kind]) {
      const typed = inputs[`target.${name}`].value.trim();
      if (typed) target[name] = typed;
    }
    if (kind === "http") {
      target.method = inputs["target.method"].value;
      const sent = headers.value();
      if (Object.keys(sent).length) target.headers = sent;
    }
    return target;
  }

  const typeField = fieldOf(prefix, inputs, "target.type", "Target type", type);
  return { nodes: [typeField, ...Object.values(groups)], value };
}

// Header rows, each a name, a value and whether the value is the ARN of a secret the worker reads
// at delivery ({"secret": ARN}). A refused header is shown at its value: the API names it
// `target.headers.<name>` (or `...<name>.secret`), which is that value's data-field.
function headerRows(prefix) {
  const list = h("div");
  const legendId = `${prefix}-headers-legend`;
  const error = h("p", { class: "error", id: `${prefix}-headers-error` });
  const add = h("button", { type: "button", onclick: () => addRow() }, "Add header");
  const node = h("fieldset", { "aria-labelledby": legendId, "data-field": "target.headers", "aria-describedby": error.id },
    h("legend", { id: legendId }, "Headers"), list, add, error);
  const rows = [];

  function addRow() {
    const n = rows.length + 1;
    const name = text("", { "aria-label": `Header ${n} name`, placeholder: "Authorization" });
    const valueId = `${prefix}-header-${n}`;
    const value = text("", { "aria-label": `Header ${n} value`, id: valueId, "aria-describedby": `${valueId}-error` });
    const secret = h("input", { type: "checkbox", id: `${valueId}-secret` });
    const row = { name, value, secret };
    const named = () => value.setAttribute("data-field", `target.headers.${name.value.trim()}`);
    name.addEventListener("input", named);
    value.addEventListener("input", () => clearError(value));
    const remove = h("button", { type: "button", "aria-label": `Remove header ${n}`, onclick: () => {
      rows.splice(rows.indexOf(row), 1);
      line.remove();
    } }, "Remove");
    const line = h("div", { class: "header-row" }, name, value,
      h("span", { class: "check" }, secret, h("label", { for: secret.id }, `Header ${n} value is a secret ARN`)), remove,
      h("p", { class: "error", id: `${valueId}-error` }));
    rows.push(row);
    list.append(line);
    name.focus();
  }

  function value() {
    const headers = {};
    for (const row of rows) {
      const name = row.name.value.trim();
      if (!name) continue;
      headers[name] = row.secret.checked ? { secret: row.value.value.trim() } : row.value.value;
    }
    return headers;
  }

  return { node, value };
}
