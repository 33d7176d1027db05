// Small inline SVG charts: no library to ship, and each has a text alternative.
import { h } from "./dom.js";

const NS = "http://www.w3.org/2000/svg";
// The left margin holds the widest y label ("999 min", "7,000" at 10 px) with room to spare.
const W = 520, H = 160, PAD = { left: 56, right: 8, top: 10, bottom: 22 };

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  for (const child of children.flat()) if (child) node.append(child);
  return node;
}

function text(x, y, value, anchor = "start") {
  const node = svg("text", { x, y, "text-anchor": anchor });
  node.textContent = value;
  return node;
}

function frame(label, max, minutes) {
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img", "aria-label": label });
  const y0 = H - PAD.bottom;
  root.append(
    svg("line", { x1: PAD.left, y1: y0, x2: W - PAD.right, y2: y0, class: "axis" }),
    text(PAD.left - 4, PAD.top + 4, typeof max === "number" ? max.toLocaleString("en") : max, "end"),
    text(PAD.left - 4, y0, "0", "end"),
    text(PAD.left, H - 6, minutes[0] ? minutes[0].minute.slice(11, 16) + "Z" : ""),
    text(W - PAD.right, H - 6, minutes.length ? minutes[minutes.length - 1].minute.slice(11, 16) + "Z" : "", "end"),
  );
  return root;
}

const xOf = (i, n) => PAD.left + ((W - PAD.left - PAD.right) * (i + 0.5)) / n;
const yOf = (v, max) => H - PAD.bottom - ((H - PAD.top - PAD.bottom) * v) / (max || 1);

export function startsChart(minutes) {
  const max = Math.max(1, ...minutes.map((m) => m.starts));
  const total = minutes.reduce((sum, m) => sum + m.starts, 0);
  const root = frame(`Executions per minute over the last hour: ${total} in all, at most ${max} in one minute`, max, minutes);
  const width = Math.max(1, (W - PAD.left - PAD.right) / minutes.length - 1);
  minutes.forEach((m, i) => {
    if (!m.starts) return;
    const y = yOf(m.starts, max);
    const bar = svg("rect", { x: xOf(i, minutes.length) - width / 2, y, width, height: H - PAD.bottom - y, class: "bar" });
    bar.append(svg("title", {}, document.createTextNode(`${m.minute}: ${m.starts}`)));
    root.append(bar);
  });
  return root;
}

// A duration in the unit that fits its size: "840 ms", "12 s", "3.5 min", "2.1 h", "2,527 d".
const UNITS = [["d", 86400000], ["h", 3600000], ["min", 60000], ["s", 1000]];

export function duration(ms) {
  if (ms === null || ms === undefined) return "–";
  const [unit, size] = UNITS.find(([, length]) => Math.abs(ms) >= length) || ["ms", 1];
  const value = ms / size;
  const digits = Math.abs(value) < 10 && unit !== "ms" ? 1 : 0;
  return `${value.toLocaleString("en", { maximumFractionDigits: digits, minimumFractionDigits: 0 })} ${unit}`;
}

export function latenessChart(minutes, p50, p99) {
  const values = minutes.flatMap((m) => [m.lateness_p50_ms, m.lateness_p99_ms]).filter((v) => v !== null);
  const max = Math.max(1, ...values);
  const summary = p50 === null ? "no first attempts in the last hour" : `p50 ${duration(p50)}, p99 ${duration(p99)} over the hour`;
  const root = frame(`Start lateness per minute over the last hour: ${summary}`, duration(max), minutes);
  for (const [key, line] of [["lateness_p99_ms", "p99"], ["lateness_p50_ms", "p50"]]) {
    const points = minutes.map((m, i) => (m[key] === null ? null : `${xOf(i, minutes.length).toFixed(1)},${yOf(m[key], max).toFixed(1)}`)).filter(Boolean);
    if (points.length === 1) {
      const [x, y] = points[0].split(",");
      root.append(svg("circle", { cx: x, cy: y, r: 2.5, class: `dot ${line}` }));
    } else if (points.length) root.append(svg("polyline", { points: points.join(" "), class: `line ${line}` }));
  }
  return h("figure", {}, root, h("figcaption", { class: "muted" }, "blue: p50, orange: p99 (first attempts; start minus scheduled instant)"));
}
