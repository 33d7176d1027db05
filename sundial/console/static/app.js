// The console: a hash router over four pages, each refreshed in place every few seconds.
import { announce, replace, h } from "./dom.js";
import * as overview from "./pages/overview.js";
import * as jobs from "./pages/jobs.js";
import * as job from "./pages/job.js";
import * as create from "./pages/new.js";

const REFRESH_MS = 5000;
const main = document.getElementById("main");
let current = null;
let timer = null;

function route() {
  const path = location.hash.replace(/^#/, "") || "/";
  const match = path.match(/^\/jobs\/([^/?]+)$/);
  if (match) return { page: job, params: { id: decodeURIComponent(match[1]) }, nav: "#/jobs" };
  if (path.startsWith("/jobs")) return { page: jobs, params: Object.fromEntries(new URLSearchParams(path.split("?")[1] || "")), nav: "#/jobs" };
  if (path === "/new") return { page: create, params: {}, nav: "#/new" };
  return { page: overview, params: {}, nav: "#/" };
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
  replace(main, h("p", {}, "Loading…"));
  current = await page.render(main, params);
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

window.addEventListener("hashchange", show);
show();
