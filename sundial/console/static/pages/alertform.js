// The alert route's fields of New job and Edit (docs/api.md, "Alert route"): where a dead
// occurrence's summary goes (an http URL, an SQS queue or an SNS topic) and, for a recurring job,
// after how many dead occurrences in a row, and whether it also hears of missed instants.
import { h } from "../dom.js";
import { fieldOf, number, select, text } from "./form.js";

const KINDS = { none: null, http: "url", sqs: "queue_url", sns: "topic_arn" };
const PLACEHOLDERS = {
  http: "https://alerts.example.com/hook",
  sqs: "https://sqs.eu-west-1.amazonaws.com/123456789012/alerts",
  sns: "arn:aws:sns:eu-west-1:123456789012:alerts",
};

export function alertFields(prefix, inputs, job) {
  const route = job?.on_dead || null;
  const kind = route ? route.type : "none";
  const field = (name, label, control, hint) => fieldOf(prefix, inputs, name, label, control, hint);
  const address = text(route ? route[KINDS[kind]] : "", { placeholder: PLACEHOLDERS[kind] || "" });
  const kinds = select(Object.keys(KINDS), kind);
  const missed = h("input", { type: "checkbox", checked: Boolean(job?.alert_on_missed) });
  // Without a route there is nowhere to send a notice: the box is off, and sent as false.
  const follow = () => {
    address.disabled = missed.disabled = kinds.value === "none";
    address.placeholder = PLACEHOLDERS[kinds.value] || "";
  };
  kinds.addEventListener("change", follow);
  follow();
  return [
    field("on_dead.type", "Alert route", kinds, "Where a dead occurrence's summary goes, signed as deliveries are."),
    // Errors about the route (on_dead.url, on_dead.topic_arn...) are shown at its address.
    field("on_dead", "Alert route address", address, "The http URL, the SQS queue URL or the SNS topic ARN."),
    field("on_failure_streak", "Alert after dead occurrences in a row", number(job?.on_failure_streak, { min: 1, max: 1000 }),
      "Recurring, with a route: only the death that makes this many in a row is sent, once a streak. Empty: every death."),
    field("alert_on_missed", "Also alert on missed instants", missed,
      "Recurring, with a route: it also hears of instants skipped by a misfire or an overlap, one notice a stretch."),
  ];
}

// The route as the API takes it: null for none. Unchanged from `job`'s (the same kind and address),
// it is the job's own, so that an edit does not send it again without its headers.
export function alertValues(inputs, job) {
  const kind = inputs["on_dead.type"].value;
  const address = inputs.on_dead.value.trim();
  const streak = inputs.on_failure_streak.value.trim();
  const missed = inputs.alert_on_missed;
  const values = { on_failure_streak: streak === "" ? null : Number(streak), alert_on_missed: !missed.disabled && missed.checked };
  const current = job?.on_dead || null;
  if (kind === "none") values.on_dead = null;
  else if (current && current.type === kind && current[KINDS[kind]] === address) values.on_dead = current;
  else values.on_dead = { type: kind, [KINDS[kind]]: address };
  return values;
}
