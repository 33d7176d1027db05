// Which actions a job's state allows, as the API decides them (docs/api.md, "Jobs"; the state
// machine in docs/design.md): each answers why not, or null when the action fits.

export const MAX_WAITING_TRIGGERS = 10;

// action -> [button label, verb, its past participle]
export const ACTIONS = {
  pause: ["Pause", "pause", "paused"],
  resume: ["Resume", "resume", "resumed"],
  trigger: ["Run now", "run now", "run"],
  cancel: ["Cancel", "cancel", "cancelled"],
  retry: ["Retry", "retry", "retried"],
  edit: ["Edit", "edit", "edited"],
};

// An at(...) schedule names one instant: such a job is a one-off, as one without a schedule.
export function isRecurring(job) {
  return Boolean(job.schedule) && !job.schedule.trim().toLowerCase().startsWith("at(");
}

const CHECKS = {
  pause: (job) => recurringOnly(job, "pause") || (job.paused ? "It is paused already." : null),
  resume: (job) => recurringOnly(job, "resume") || (job.paused ? null : "It is not paused."),
  trigger: (job) => {
    if (job.status === "cancelled") return "It is cancelled: create a new job to run it again.";
    if (job.triggers_waiting >= MAX_WAITING_TRIGGERS) return `${MAX_WAITING_TRIGGERS} triggered runs wait already: run it again once one has started.`;
    return null;
  },
  cancel: (job) => {
    if (job.status === "cancelled") return "It is cancelled already.";
    if (job.status === "succeeded") return "It has finished: nothing is left to cancel.";
    return null;
  },
  retry: (job) => (job.status === "dead" ? null : `Only a dead job can be retried; this one is ${job.status}.`),
  edit: (job) => {
    if (job.status === "cancelled") return "It is cancelled: create a new job instead.";
    if (job.status === "succeeded") return "It has finished: create a new job to run it again.";
    if (job.status === "running") return "An attempt is running: edit it once the attempt has ended.";
    return null;
  },
};

function recurringOnly(job, verb) {
  if (!isRecurring(job)) return `Only recurring jobs ${verb}; this one runs once.`;
  if (job.status === "cancelled") return "It is cancelled.";
  return null;
}

export function refusal(job, action) {
  return CHECKS[action](job);
}

// The job as a person names it: its name, with its id where another job on the page has that name.
export function labelOf(job, others = []) {
  if (!job.name) return job.id;
  const shared = others.some((other) => other.id !== job.id && other.name === job.name);
  return shared ? `${job.name} (${job.id})` : job.name;
}

// The API's message with the job's name for its id: "job '01J…' is not recurring" reads
// "flaky is not recurring".
export function readable(message, job, label = labelOf(job)) {
  return message.split(`job '${job.id}'`).join(label);
}
