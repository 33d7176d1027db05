// Building DOM nodes from data without innerHTML: job names, errors and payloads are user text.
import { absolute, relative } from "./times.js";

export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "checked" || name === "value" || name === "disabled" || name === "selected") node[name] = value;
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// A table with a caption and column headers; `rows` are arrays of cells (a node, text, or {num}).
export function table(caption, headers, rows, attrs = {}) {
  return scroller(h("table", attrs,
    h("caption", {}, caption),
    h("thead", {}, h("tr", {}, headers.map((head) => h("th", { scope: "col", class: head.num ? "num" : null }, head.text ?? head)))),
    h("tbody", {}, rows.map((cells) => h("tr", {}, cells.map((cell) => cellOf(cell)))))));
}

function cellOf(cell) {
  if (cell && typeof cell === "object" && "num" in cell) return h("td", { class: "num" }, cell.num ?? "–");
  if (cell && typeof cell === "object" && "dst" in cell) return h("td", {}, h("span", { class: "dst" }, cell.dst));
  return h("td", {}, cell ?? "–");
}

export function statusBadge(status) {
  return h("span", { class: `status status-${status}` }, status);
}

// An instant in the zone the reader chose (times.js), with how far it is from now:
// "2026-12-01 09:00:00.123Z (in 5 min)".
export function when(text, jobZone) {
  if (!text) return "–";
  return `${absolute(text, jobZone)} (${relative(text)})`;
}

// A table wrapped so that a wide one scrolls by itself, never the page (a 390 px screen).
export function scroller(...children) {
  return h("div", { class: "scroll" }, children);
}

export function announce(message, bad = false) {
  const region = document.getElementById("announce");
  region.textContent = message;
  region.classList.toggle("bad", bad);
}

// Header values shown as themselves (docs/api.md); every other value is masked whatever the API
// answered, and a reference to a secret (an object naming its ARN) is shown as it is.
const SHOWN = new Set(["content-type", "accept", "accept-language", "user-agent"]);

export function masked(target) {
  if (!target || !target.headers) return target;
  const shown = (name, value) => (typeof value === "object" && value !== null) || SHOWN.has(name.toLowerCase());
  const headers = Object.fromEntries(Object.entries(target.headers).map(([name, value]) => [name, shown(name, value) ? value : "***"]));
  return { ...target, headers };
}
