// The console: a hash router over its pages, each refreshed in place every few seconds.
import { announce, replace, h } from "./dom.js";
import { mode, modes, setMode } from "./times.js";
import * as overview from "./pages/overview.js";
import * as jobs from "./pages/jobs.js";
import * as job from "./pages/job.js";
import * as create from "./pages/new.js";
import * as limits from "./pages/limits.js";

const REFRESH_MS = 5000;
const main = document.getElementById("main");
const times = document.getElementById("times");
let current = null;
let timer = null;
let shown = 0;

const notFound = {
  async render(root) {
    replace(root, h("h1", {}, "Page not found"),
      h("p", {}, `The console has no page at ${location.hash}.`),
      h("p", {}, h("a", { href: "#/" }, "Go to the overview")));
    return {};
  },
};

function route() {
  const path = location.hash.replace(/^#/, "") || "/";
  const [where, search] = path.split("?");
  const match = where.match(/^\/jobs\/([^/]+)$/);
  if (match) return { page: job, params: { id: decodeURIComponent(match[1]) }, nav: "#/jobs" };
  if (where === "/jobs") return { page: jobs, params: Object.fromEntries(new URLSearchParams(search || "")), nav: "#/jobs" };
  // A key may hold "/" and ":": the rest of the address is the key, encoded as one component.
  const limit = where.match(/^\/limits\/(.+)$/);
  if (limit) return { page: limits, params: { key: decodeURIComponent(limit[1]) }, nav: "#/limits" };
  if (where === "/limits") return { page: limits, params: Object.fromEntries(new URLSearchParams(search || "")), nav: "#/limits" };
  if (where === "/new") return { page: create, params: {}, nav: "#/new" };
  if (where === "/") return { page: overview, params: {}, nav: "#/" };
  return { page: notFound, params: {}, nav: null };
}

async function show() {
  clearInterval(timer);
  if (current && current.dispose) current.dispose();
  const { page, params, nav } = route();
  for (const link of document.querySelectorAll("header nav a")) {
    if (link.getAttribute("href") === nav) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  announce("");
  replace(times, modes().map(([value, label]) => h("option", { value, selected: value === mode() }, label)));
  // Each page draws into a container of its own: one left behind by a quicker navigation draws
  // into a container no longer on the page, never over the page that replaced it.
  const mine = ++shown;
  const root = h("div", {}, h("p", { role: "status" }, "Loading…"));
  replace(main, root);
  current = null;
  const drawn = await page.render(root, params);
  if (mine !== shown) return;
  current = drawn;
  stamp();
  if (current && current.refresh) timer = setInterval(refresh, REFRESH_MS);
}

async function refresh() {
  if (document.visibilityState !== "visible" || !current || !current.refresh) return;
  try {
    await current.refresh();
    stamp();
  } catch (error) {
    document.getElementById("refreshed").textContent = `refresh failed: ${error.message}`;
  }
}

function stamp() {
  document.getElementById("refreshed").textContent = `updated ${new Date().toISOString().slice(11, 19)}Z`;
}

// Times in UTC, the job's zone or the browser's: a change redraws the page in the new zone.
times.addEventListener("change", () => {
  setMode(times.value);
  show();
});

window.addEventListener("hashchange", show);
show();
