// The Sundial HTTP API (docs/api.md), at the base the page was served with: "" on the local stack,
// "/api" behind `sundial console`, which signs and forwards.

const base = document.querySelector('meta[name="sundial-api"]').content;

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.field = body ? body.field : undefined;
  }
}

export async function call(method, path, body) {
  // Marks the console's own calls: `sundial console` forwards no others (sundial/console/server.py).
  const init = { method, headers: { "X-Sundial-Console": "1" } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(base + path, init);
  const text = await response.text();
  const data = text ? JSON.parse(text) : null;
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

export const get = (path) => call("GET", path);
export const post = (path, body) => call("POST", path, body);

export function query(params) {
  const pairs = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "");
  return pairs.length ? "?" + new URLSearchParams(pairs).toString() : "";
}

// One job action as the API names it: pause, resume, trigger, retry, or cancel (DELETE).
export function act(jobId, action) {
  const path = `/jobs/${encodeURIComponent(jobId)}`;
  return action === "cancel" ? call("DELETE", path) : post(`${path}/${action}`);
}
