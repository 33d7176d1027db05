// Instants as the reader chose to see them: in UTC, in the job's own zone or in the browser's, each
// with how long ago or how soon it is. The choice is kept in the browser across visits.

const KEY = "sundial.times";
const CHOICES = ["utc", "job", "browser"];

// Asked each time: the system's zone may change while the console is open (a laptop travels).
export function browserZone() {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

export function modes() {
  return [["utc", "UTC"], ["job", "Job's time zone"], ["browser", `Browser's time zone (${browserZone()})`]];
}

export function mode() {
  const chosen = localStorage.getItem(KEY);
  return CHOICES.includes(chosen) ? chosen : "utc";
}

export function setMode(value) {
  localStorage.setItem(KEY, value);
}

// The zone an instant is shown in: a job's own zone only where there is a job to take it from.
function zoneFor(jobZone) {
  const chosen = mode();
  if (chosen === "browser") return browserZone();
  if (chosen === "job" && jobZone) return jobZone;
  return "UTC";
}

// "2026-12-01 09:00:00.123Z" in UTC (milliseconds kept: starts are that precise), or
// "2026-12-01 10:00:00.123 UTC+1" in another zone.
export function absolute(text, jobZone) {
  const zone = zoneFor(jobZone);
  if (zone === "UTC") return text.replace("T", " ");
  const date = new Date(text);
  const local = new Intl.DateTimeFormat("en-CA", { timeZone: zone, dateStyle: "short", timeStyle: "medium", hourCycle: "h23" }).format(date);
  const millis = String(date.getUTCMilliseconds()).padStart(3, "0");
  return `${local.replace(",", "")}.${millis} ${offsetAt(text, zone)}`;
}

// "in 5 min", "3 h ago", "now": the largest unit that gives at least one of it.
const UNITS = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1]];

export function relative(text, now = Date.now()) {
  const seconds = Math.round((new Date(text).getTime() - now) / 1000);
  const size = Math.abs(seconds);
  if (size < 1) return "now";
  const [unit, length] = UNITS.find(([, span]) => size >= span);
  const count = Math.floor(size / length);
  return seconds > 0 ? `in ${count} ${unit}` : `${count} ${unit} ago`;
}

// Which minute it is: a page whose data has not changed is still drawn again once a minute, so
// that "in 5 min" does not go on saying so.
export function minuteNow() {
  return Math.floor(Date.now() / 60000);
}

// "UTC+1", "UTC-4:30" or "UTC" for an instant in a zone.
export function offsetAt(instant, zone) {
  const parts = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "shortOffset" }).formatToParts(new Date(instant));
  const name = parts.find((p) => p.type === "timeZoneName").value;
  return name.replace("GMT", "UTC");
}

// The IANA zones this browser knows, UTC first: the one list both job forms offer.
export function zones() {
  const known = Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : [];
  return ["UTC", ...known.filter((zone) => zone !== "UTC")];
}
