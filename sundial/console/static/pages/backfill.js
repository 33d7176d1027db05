// Backfill: the occurrences a recurring job's schedule had before the job existed, previewed (a dry
// run of POST /jobs/{id}/backfill) before the reader confirms, and then run, each once.
import { post } from "../api.js";
import { confirmAction } from "../dialog.js";
import { announce, h, replace, table, when } from "../dom.js";

const WHEN_HINT = "RFC 3339 with an offset, e.g. 2026-11-23T00:00:00Z";

// `done` runs after a backfill was accepted (the page reads the job again).
export function backfillCard(job, done) {
  const path = `/jobs/${encodeURIComponent(job.id)}/backfill`;
  const from = h("input", { type: "text", id: "bf-from", placeholder: WHEN_HINT, "aria-describedby": "bf-hint" });
  const to = h("input", { type: "text", id: "bf-to", placeholder: WHEN_HINT, value: job.created_at, "aria-describedby": "bf-hint" });
  const result = h("div", { "aria-live": "polite" });
  const window = () => ({ from: from.value.trim(), to: to.value.trim() });

  async function preview(event) {
    event.preventDefault();
    let planned;
    try {
      planned = await post(path, { ...window(), dry_run: true });
    } catch (error) {
      return replace(result, h("p", { role: "alert" }, error.message));
    }
    replace(result, planTable(planned, job.timezone, "would run"),
      planned.instants.length
        ? h("button", { type: "button", class: "danger", onclick: () => confirm(planned) }, `Run ${planned.instants.length} backfilled occurrence(s)`)
        : h("p", { class: "muted" }, "Nothing new to run in this window."));
  }

  async function confirm(planned) {
    const sure = await confirmAction({
      question: `Run ${planned.instants.length} backfilled occurrence(s) of ${job.name || job.id}?`,
      detail: `From ${planned.instants[0]} to ${planned.instants[planned.instants.length - 1]}, each once, with its own idempotency key. An instant backfilled is never backfilled again.`,
      yes: "Yes, run them",
      no: "No, go back",
    });
    if (!sure) return;
    try {
      const answer = await post(path, window());
      replace(result, planTable(answer, job.timezone, "runs"));
      announce(`Backfill: ${answer.instants.length} occurrence(s) run.`);
      await done();
    } catch (error) {
      replace(result, h("p", { role: "alert" }, error.message));
    }
  }

  return h("section", { class: "card", "aria-labelledby": "h-backfill" },
    h("h2", { id: "h-backfill" }, "Backfill"),
    h("p", { id: "bf-hint", class: "muted" }, `The occurrences the schedule had before the job was created (${when(job.created_at, job.timezone)}), at most 50 a window. ${WHEN_HINT}.`),
    h("form", { onsubmit: preview },
      h("label", { for: "bf-from" }, "From"), from,
      h("label", { for: "bf-to" }, "To (excluded)"), to,
      h("button", { type: "submit" }, "Preview")),
    result);
}

function planTable(plan, zone, verb) {
  const rows = [
    ...plan.instants.map((instant) => [instant, when(instant, zone), verb]),
    ...plan.skipped.map((instant) => [instant, when(instant, zone), "skipped (overlap policy skip)"]),
    ...plan.already.map((instant) => [instant, when(instant, zone), "backfilled before"]),
  ].sort((a, b) => a[0].localeCompare(b[0]));
  if (!rows.length) return h("p", { class: "muted" }, `No occurrence between ${plan.from} and ${plan.to}.`);
  return table(`Occurrences from ${plan.from} to ${plan.to}`, ["Scheduled (UTC)", "In the job's zone", "What happens"], rows);
}
