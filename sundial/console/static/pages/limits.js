// Limits: each key's limit (docs/api.md, "Limits") with what runs and waits on it now, a form to
// add or change one, and delete after a confirmation. #/limits/<key> opens that key's form.
import { call, get, query } from "../api.js";
import { duration } from "../charts.js";
import { confirmAction } from "../dialog.js";
import { announce, h, replace, scroller, when } from "../dom.js";
import { minuteNow } from "../times.js";
import { fieldErrors, fieldOf, number, text } from "./form.js";
import { pageTokens, walkTo } from "./paging.js";

const PAGE_SIZE = 50;
const COLUMNS = 9;
const KEY_HINT = "1-128 characters of A-Z a-z 0-9 . _ : / -; the jobs naming it share the limit.";

const path = (key) => `/limits/${encodeURIComponent(key)}`;
const address = (key) => `#/limits/${encodeURIComponent(key)}`;

export async function render(root, params) {
  const tokens = pageTokens({ limits: true });
  const state = { page: Math.max(0, (parseInt(params.page, 10) || 1) - 1), limits: [], next: null, shown: "", asked: 0 };
  const body = h("tbody");
  const list = h("table", {}, h("caption", {}, "Limits per key"),
    h("thead", {}, h("tr", {}, ["Key", "Max concurrent", "Per second", "Burst", "Running", "Waiting", "Oldest wait", "Updated", "Actions"]
      .map((t, i) => h("th", { scope: "col", class: i >= 1 && i <= 6 ? "num" : null }, t)))),
    body);
  const pageLabel = h("p", { class: "muted", role: "status", "aria-label": "Paging" });
  const previous = h("button", { type: "button", disabled: true, onclick: () => go(state.page - 1) }, "Previous page");
  const next = h("button", { type: "button", disabled: true, onclick: () => go(state.page + 1) }, "Next page");
  const editor = limitForm(async (key) => {
    announce(`Saved the limit of ${key}.`);
    state.shown = "";
    await load();
  });

  // Loading is shown as loading, never as "no limits", and paging waits for it.
  function loading() {
    list.setAttribute("aria-busy", "true");
    previous.disabled = next.disabled = true;
    pageLabel.textContent = "Loading limits…";
    replace(body, h("tr", {}, h("td", { colspan: COLUMNS }, "Loading limits…")));
  }

  async function load() {
    const mine = ++state.asked;
    const page = await walkTo(tokens, state.page, (token) => get("/limits" + query({ limit: PAGE_SIZE, next_token: token })));
    if (mine !== state.asked) return;
    state.page = page.index;
    state.limits = page.answer.limits;
    state.next = page.answer.next_token;
    list.removeAttribute("aria-busy");
    const shown = JSON.stringify([page.answer, minuteNow()]);
    if (shown !== state.shown) {
      state.shown = shown;
      draw();
    }
  }

  function draw() {
    const rows = state.limits.map((limit) => h("tr", {},
      h("th", { scope: "row" }, limit.key),
      h("td", { class: "num" }, limit.max_concurrent ?? "–"),
      h("td", { class: "num" }, limit.per_second ?? "–"),
      // The burst only bounds starts a second: without a rate there is none to bound.
      h("td", { class: "num" }, limit.per_second === null ? "–" : limit.burst),
      h("td", { class: "num" }, limit.running),
      h("td", { class: "num" }, limit.waiting_is_estimate ? `at least ${limit.waiting}` : limit.waiting),
      h("td", { class: "num" }, limit.oldest_wait_seconds === null ? "–" : duration(limit.oldest_wait_seconds * 1000)),
      h("td", {}, when(limit.updated_at)),
      h("td", {}, h("div", { class: "toolbar" },
        h("button", { type: "button", "aria-label": `Edit ${limit.key}`, onclick: () => editor.edit(limit) }, "Edit"),
        h("button", { type: "button", class: "danger", "aria-label": `Delete ${limit.key}`, onclick: () => remove(limit.key) }, "Delete")))));
    replace(body, rows.length ? rows : h("tr", {}, h("td", { colspan: COLUMNS }, state.page ? "No limits on this page." : "No key has a limit: every job starts as soon as it is due.")));
    previous.disabled = state.page === 0;
    next.disabled = !state.next;
    const count = `${state.limits.length} key${state.limits.length === 1 ? "" : "s"}`;
    pageLabel.textContent = `Page ${state.page + 1}, ${count}${state.next ? "; more on the next page" : ""}`;
  }

  async function go(page) {
    state.page = page;
    history.pushState(null, "", "#/limits" + query({ page: page > 0 ? page + 1 : "" }));
    loading();
    state.shown = "";
    await load();
  }

  async function remove(key) {
    const sure = await confirmAction({
      question: `Delete the limit of ${key}?`,
      detail: `The jobs naming ${key} then start as soon as they are due, however many at once. They keep the key: a limit set on it again applies to them.`,
      yes: "Yes, delete it",
      no: "No, keep it",
    });
    if (!sure) return;
    try {
      await call("DELETE", path(key));
      announce(`Deleted the limit of ${key}.`);
    } catch (error) {
      announce(error.status === 404 ? `The limit of ${key} was deleted already.` : `Delete refused: ${error.message}`, true);
    }
    if (editor.key() === key) editor.reset();
    state.shown = "";
    await load();
  }

  replace(root, h("h1", {}, "Limits"),
    h("p", { class: "muted" }, "Jobs naming the same limit key share its limit: at most Max concurrent of their attempts run at once, and they start at most Per second a second on average, Burst at once. A held-back occurrence waits, queued, and uses no attempt. – : no bound of that kind."),
    h("section", { class: "card", "aria-labelledby": "h-limits" }, h("h2", { id: "h-limits" }, "Keys"),
      scroller(list), h("div", { class: "pager" }, previous, next, pageLabel)),
    editor.node);
  loading();
  try {
    await load();
  } catch (error) {
    list.removeAttribute("aria-busy");
    pageLabel.textContent = "";
    replace(body, h("tr", {}, h("td", { colspan: COLUMNS, role: "alert" }, `The limits could not be listed: ${error.message}`)));
  }
  if (params.key) await editor.open(params.key);
  return { refresh: load };
}

// The form that adds a key's limit or changes one (PUT replaces it whole). `saved(key)` runs after
// the API took it.
function limitForm(saved) {
  const inputs = {};
  const field = (name, label, control, hint) => fieldOf("l", inputs, name, label, control, hint);
  const heading = h("h2", { id: "h-limit-form" }, "Add a limit");
  const note = h("p", { class: "muted" });
  const formError = h("p", { class: "error", role: "alert" });
  const perSecond = number("", { min: 0.01, max: 10000, step: "any" });
  const burst = number("", { min: 1, step: 1 });
  // A burst without a rate is refused: it is offered only once there is a rate.
  const follow = () => {
    burst.disabled = perSecond.value.trim() === "" && !perSecond.validity.badInput;
  };
  perSecond.addEventListener("input", follow);
  perSecond.addEventListener("change", follow);
  const another = h("button", { type: "button", hidden: true, onclick: () => reset() }, "Add another key instead");

  const form = h("form", { "aria-labelledby": heading.id, onsubmit: submit, novalidate: true },
    note,
    field("key", "Key", text("", { placeholder: "payments-api", autocomplete: "off" }), KEY_HINT),
    field("max_concurrent", "Max concurrent", number("", { min: 1, max: 10000, step: 1 }),
      "Attempts of the key's jobs running at once, 1-10,000. Empty: no such bound."),
    field("per_second", "Per second", perSecond, "Starts a second on average, 0.01-10,000. Empty: no such bound."),
    field("burst", "Burst", burst, "Starts at once within the rate, 1 or more. Empty: Per second rounded up."),
    formError,
    h("div", { class: "toolbar" }, h("button", { type: "submit", class: "primary" }, "Save limit"), another));
  follow();
  const node = h("section", { class: "card", "aria-labelledby": heading.id }, heading, form);

  // The body as the API takes it; a number input holding what is not a number is refused here,
  // since the browser would otherwise hand it over as empty.
  function body() {
    const values = {};
    for (const name of ["max_concurrent", "per_second", "burst"]) {
      const input = inputs[name];
      if (input.disabled) continue;
      if (input.validity.badInput) throw { field: name, message: `${name}: not a number` };
      const typed = input.value.trim();
      values[name] = typed === "" ? null : Number(typed);
    }
    if (values.burst === null) delete values.burst;
    return values;
  }

  async function submit(event) {
    event.preventDefault();
    const key = inputs.key.value.trim();
    let spec;
    try {
      if (!key) throw { field: "key", message: "key: give the key the limit is for" };
      spec = body();
    } catch (error) {
      return fieldErrors(form, formError, error);
    }
    fieldErrors(form, formError, null);
    try {
      await call("PUT", path(key), spec);
    } catch (error) {
      return fieldErrors(form, formError, error);
    }
    reset();
    await saved(key);
  }

  function fill(limit) {
    fieldErrors(form, formError, null);
    inputs.key.value = limit ? limit.key : "";
    inputs.max_concurrent.value = limit?.max_concurrent ?? "";
    inputs.per_second.value = limit?.per_second ?? "";
    inputs.burst.value = limit && limit.per_second !== null ? limit.burst : "";
    follow();
  }

  // Editing a key: its form filled in, the key fixed (another key is another limit) and the
  // address naming it, so that a reload or a link brings the same form back.
  function edit(limit) {
    fill(limit);
    inputs.key.readOnly = true;
    heading.textContent = `Edit the limit of ${limit.key}`;
    note.textContent = "";
    another.hidden = false;
    history.replaceState(null, "", address(limit.key));
    node.scrollIntoView({ block: "nearest" });
    inputs.max_concurrent.focus();
  }

  function reset(key = "") {
    fill(null);
    inputs.key.value = key;
    inputs.key.readOnly = false;
    heading.textContent = "Add a limit";
    note.textContent = "";
    another.hidden = true;
    history.replaceState(null, "", "#/limits");
  }

  // #/limits/<key>: that key's limit to edit, or, when it has none, the form to add one for it.
  async function open(key) {
    try {
      edit(await get(path(key)));
    } catch (error) {
      reset(key);
      history.replaceState(null, "", address(key));
      if (error.status === 404) {
        note.textContent = `${key} has no limit: the jobs naming it start as soon as they are due. Set one here.`;
        inputs.max_concurrent.focus();
      } else {
        fieldErrors(form, formError, error);
      }
    }
  }

  return { node, edit, reset, open, key: () => (inputs.key.readOnly ? inputs.key.value : null) };
}
