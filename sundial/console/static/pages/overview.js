// Overview: jobs per status and priority, dead jobs to retry, queues, and the last hour's starts.
import { act, get } from "../api.js";
import { announce, h, replace, statusBadge, table, when } from "../dom.js";
import { duration, latenessChart, startsChart } from "../charts.js";
import { labelOf, readable } from "../lifecycle.js";
import { minuteNow } from "../times.js";

const PRIORITIES = ["high", "medium", "low"];
const STATUSES = ["pending", "queued", "running", "succeeded", "failed", "dead", "cancelled"];

export async function render(root) {
  let last = "";
  async function refresh() {
    const stats = await get("/stats");
    const text = JSON.stringify([stats, minuteNow()], (k, v) => (k === "generated_at" ? undefined : v));
    if (text !== last) {
      last = text;
      draw(root, stats);
    }
  }
  await guarded(root, refresh);
  return { refresh };
}

async function guarded(root, refresh) {
  try {
    await refresh();
  } catch (error) {
    replace(root, h("h1", {}, "Overview"), h("p", { role: "alert" }, `The stats could not be read: ${error.message}`));
  }
}

function draw(root, stats) {
  const counts = stats.jobs.by_status;
  const rows = STATUSES.map((status) => {
    const byPriority = counts[status] || {};
    const total = PRIORITIES.reduce((sum, p) => sum + (byPriority[p] || 0), 0);
    return [h("a", { href: `#/jobs?status=${status}` }, statusBadge(status)), ...PRIORITIES.map((p) => ({ num: byPriority[p] || 0 })), { num: total }];
  });
  replace(root,
    h("h1", {}, "Overview"),
    h("div", { class: "grid" },
      h("section", { class: "card", "aria-labelledby": "h-counts" },
        h("h2", { id: "h-counts" }, `Jobs (${stats.jobs.total}, ${stats.jobs.paused} paused, ${stats.jobs.by_health.failing + stats.jobs.by_health.dead} failing)`),
        table("Jobs per status and priority", ["Status", ...PRIORITIES.map((p) => ({ text: p, num: true })), { text: "total", num: true }], rows),
        h("p", { class: "muted" }, `Counted at ${when(stats.jobs.counted_at)}; counts are at most ${stats.jobs.max_age_seconds} s old.`)),
      h("section", { class: "card", "aria-labelledby": "h-queues" },
        h("h2", { id: "h-queues" }, "Queues"),
        table("Queue depth and oldest waiting work per priority",
          ["Priority", { text: "waiting messages", num: true }, { text: "in flight", num: true }, { text: "delayed", num: true }, { text: "oldest due (s)", num: true }],
          stats.queues.map((q) => [q.priority, { num: q.visible }, { num: q.in_flight }, { num: q.delayed }, { num: q.oldest_due_seconds.toFixed(1) }])),
        h("p", { class: "muted" }, "Oldest due: how far past its instant the most overdue job or lease of that priority is."))),
    deadSection(stats),
    h("div", { class: "grid" },
      h("section", { class: "card", "aria-labelledby": "h-starts" },
        h("h2", { id: "h-starts" }, `Executions per minute (${stats.executions.starts} in the last hour)`),
        startsChart(stats.executions.per_minute)),
      h("section", { class: "card", "aria-labelledby": "h-lateness" },
        h("h2", { id: "h-lateness" }, `Start lateness: p50 ${duration(stats.executions.lateness_p50_ms)}, p99 ${duration(stats.executions.lateness_p99_ms)}`),
        latenessChart(stats.executions.per_minute, stats.executions.lateness_p50_ms, stats.executions.lateness_p99_ms))));
}

// Retried here since the census was counted: left out until the next census no longer lists them.
const retried = new Set();

function deadSection(stats) {
  const heading = h("h2", { id: "h-dead" }, `Dead jobs needing attention (${stats.dead_total})`);
  const dead = stats.dead.filter((job) => !retried.has(job.id));
  if (!dead.length) return h("section", { class: "card", "aria-labelledby": "h-dead" }, heading, h("p", { class: "muted" }, "No dead jobs."));
  const rows = dead.map((job) => {
    const label = labelOf(job, dead);
    const retry = h("button", { type: "button", "aria-label": `Retry ${label}`, onclick: async (event) => {
      event.target.disabled = true;
      try {
        await act(job.id, "retry");
        retried.add(job.id);
        announce(`Retried ${label}.`);
        event.target.closest("tr").remove();
      } catch (error) {
        announce(`Retry of ${label} refused: ${readable(error.message, job, label)}`, true);
        event.target.disabled = false;
      }
    } }, "Retry");
    // A recurring job goes on to its next occurrence: nothing to retry, but say how often it died.
    const action = job.dead_in_a_row > 0 ? `recurring, ${job.dead_in_a_row} in a row dead` : retry;
    return [h("a", { href: `#/jobs/${encodeURIComponent(job.id)}` }, label), job.priority, when(job.died_at), job.error || "–", action];
  });
  return h("section", { class: "card", "aria-labelledby": "h-dead" }, heading,
    table("Dead jobs, most recent first", ["Job", "Priority", "Died at", "Last error", "Action"], rows));
}
